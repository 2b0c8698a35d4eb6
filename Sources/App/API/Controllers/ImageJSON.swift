import Accounts
import Images
import JSON
import Thumbnails

/// The image metadata of the contract: `{"id", "contentType", "byteSize", "sha256", "width",
/// "height", "createdAt", "url", "signedUrl", "signedThumbnails", "blurhash", "dominantColor"}`;
/// `signedThumbnails` holds a signed URL per thumbnail size, with `signedUrl`'s expiry (each opens
/// its own rendition only); the placeholders are null until a helper has decoded the image (soon
/// after the upload), and for good when it cannot.
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
        let signed = signer.urls(for: image.id, [.original] + ThumbnailSpec.sizes.map { .thumbnail(size: $0) })
        writer.key("signedUrl"); writer.string(signed[0])
        writer.key("signedThumbnails")
        writer.beginObject()
        for (size, url) in zip(ThumbnailSpec.sizes, signed.dropFirst()) {
            writer.key(String(size))
            writer.string(url)
        }
        writer.endObject()
        writer.key("blurhash")
        if let blurhash = image.blurhash { writer.string(blurhash) } else { writer.null() }
        writer.key("dominantColor")
        if let color = image.dominantColor { writer.string(color) } else { writer.null() }
        writer.endObject()
    }

    /// `{"images": [...], "next": cursor | null}`: a user's page, for the user and for an administrator.
    static func write(_ page: ImagePage, signer: URLSigner, into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("images")
        writer.beginArray()
        for image in page.images { write(image, signer: signer, into: &writer) }
        writer.endArray()
        writer.key("next")
        if let next = page.next { writer.string(next.text) } else { writer.null() }
        writer.endObject()
    }

    static func url(of image: StoredImage) -> String { "/users/me/images/" + image.id.lowercasedText }
}
