print("entitlements")
