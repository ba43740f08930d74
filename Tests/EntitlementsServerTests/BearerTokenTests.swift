import Testing

@testable import EntitlementsServer

/// `Authorization: Bearer <token>` as the server reads it, byte by byte.
@Suite struct BearerTokenTests {
    static let token = "s3cret-token-0123456789"

    @Test("accepted: the scheme in any case, spaces between, spaces or tabs around", arguments: [
        "Bearer s3cret-token-0123456789", "bearer s3cret-token-0123456789", "BEARER s3cret-token-0123456789",
        "BeArEr s3cret-token-0123456789", "Bearer    s3cret-token-0123456789", "  Bearer s3cret-token-0123456789  ",
        "\tBearer s3cret-token-0123456789\t",
    ])
    func accepted(_ header: String) {
        #expect(ServeAPI.authorized(header, token: Self.token))
    }

    @Test("refused: another token, scheme or shape", arguments: [
        "", "Bearer", "Bearer ", "Bearer  \t ", "Bearers3cret-token-0123456789", "Basic s3cret-token-0123456789",
        "Bear s3cret-token-0123456789", "Bearer\ts3cret-token-0123456789", "s3cret-token-0123456789",
        "Bearer s3cret-token-012345678", "Bearer s3cret-token-01234567890", "Bearer S3CRET-TOKEN-0123456789",
        "Bearer s3cret-token-0123456789 extra", "Bearer s3cret-token-012345678\u{0301}9", "Bearer s3cret token-0123456789",
        "Bearer \u{00A0}s3cret-token-0123456789", "Bëarer s3cret-token-0123456789", "Digest s3cret-token-0123456789",
        "Bearex s3cret-token-0123456789", "Bearer\u{2003}s3cret-token-0123456789",
    ])
    func refused(_ header: String) {
        #expect(!ServeAPI.authorized(header, token: Self.token))
    }

    @Test func noHeaderIsRefused() {
        #expect(!ServeAPI.authorized(nil, token: Self.token))
    }

    /// A token with a space inside is the text after the scheme's spaces, whole.
    @Test func aTokenWithASpaceIsComparedWhole() {
        #expect(ServeAPI.authorized("Bearer two words", token: "two words"))
        #expect(!ServeAPI.authorized("Bearer two  words", token: "two words"))
        #expect(!ServeAPI.authorized("Bearer two", token: "two words"))
    }
}
