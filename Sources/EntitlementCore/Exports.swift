// The core's answers are JSON values (`CustomerView.json()`), and its payloads are
// decoded from JSON and base64: whoever imports the core gets those types too.
@_exported import JSONAndBase64
