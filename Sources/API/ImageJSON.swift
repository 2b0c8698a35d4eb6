import Accounts
import Images
import JSON

/// The image metadata of the contract: `{"id", "contentType", "byteSize", "sha256", "width",
/// "height", "createdAt", "url", "signedUrl"}`.
enum ImageJSON {
    static func write(_ image: StoredImage, signer: URLSigner, into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("id"); writer.string(image.id.lowercasedText)
        writer.key("contentType"); writer.string(image.format.mimeType)
        writer.key("byteSize"); writer.int(image.byteSize)
        writer.key("sha256"); writer.string(image.sha256Hex)
        writer.key("width"); writer.int(image.width)
        writer.key("height"); writer.int(image.height)
        writer.key("createdAt"); writer.string(RFC3339.format(millisecondsSinceEpoch: image.createdAtMicroseconds / 1000))
        writer.key("url"); writer.string(url(of: image))
        writer.key("signedUrl"); writer.string(signer.url(for: image.id))
        writer.endObject()
    }

    static func url(of image: StoredImage) -> String { "/users/me/images/" + image.id.lowercasedText }
}
