import CVips
import Thumbnails

/// Makes thumbnails and placeholders with libvips, in the helper process only.
enum Renderer {
    /// JPEG and WebP qualities: small grid cells hide the difference from higher ones.
    static let jpegQuality: Int32 = 80
    static let webpQuality: Int32 = 75

    /// The loaders of the five formats the API accepts (the same as `exo_vips_start` leaves unblocked).
    static let loaders: Set<String> = [
        "VipsForeignLoadJpegBuffer", "VipsForeignLoadPngBuffer", "VipsForeignLoadWebpBuffer", "VipsForeignLoadNsgifBuffer",
        "VipsForeignLoadHeifBuffer",
    ]

    struct Refused: Error {
        let reason: String
    }

    static func run(_ job: ThumbnailJob, original: UnsafeRawBufferPointer) -> ThumbnailOutcome {
        do {
            let loader = try checkHeader(original, maxPixels: job.maxPixels)
            var renditions: [Rendition] = []
            var placeholders: Placeholders?
            // The smallest size first: its pixels make the placeholders.
            let sizes = Set(job.renditions.map(\.size) + (job.placeholders ? [ThumbnailSpec.sizes[0]] : [])).sorted()
            for size in sizes {
                let image = try thumbnail(original, size: size, loader: loader)
                defer { exo_g_object_unref(image) }
                if job.placeholders, placeholders == nil {
                    placeholders = try self.placeholders(image)
                }
                for spec in job.renditions where spec.size == size {
                    renditions.append(try encode(image, spec))
                }
            }
            return .made(renditions, placeholders)
        } catch let refused as Refused {
            return .undecodable(refused.reason)
        } catch {
            return .undecodable("\(error)")
        }
    }

    /// The loader and the dimensions, from the header alone, before any pixel is decoded.
    static func checkHeader(_ original: UnsafeRawBufferPointer, maxPixels: Int) throws -> String {
        guard let base = original.baseAddress, !original.isEmpty else { throw Refused(reason: "no bytes") }
        guard let loader = vips_foreign_find_load_buffer(base, original.count).map({ String(cString: $0) }) else {
            throw failure("no loader recognises the bytes")
        }
        guard Renderer.loaders.contains(loader) else {
            throw Refused(reason: "\(loader) is not allowed")
        }
        guard let header = exo_vips_header(base, original.count) else { throw failure("the header cannot be read") }
        defer { exo_g_object_unref(header) }
        let (width, height) = (Int(vips_image_get_width(header)), Int(vips_image_get_height(header)))
        guard width > 0, height > 0 else { throw Refused(reason: "the image is \(width) × \(height)") }
        guard width.multipliedReportingOverflow(by: height).partialValue <= maxPixels, width <= 1 << 20, height <= 1 << 20 else {
            throw Refused(reason: "\(width) × \(height) pixels is over the limit of \(maxPixels)")
        }
        return loader
    }

    static func thumbnail(_ original: UnsafeRawBufferPointer, size: Int, loader: String) throws -> UnsafeMutablePointer<VipsImage> {
        var image: UnsafeMutablePointer<VipsImage>?
        let mutable = UnsafeMutableRawPointer(mutating: original.baseAddress!)
        vips_error_clear()
        guard exo_vips_thumbnail(mutable, original.count, Int32(size), &image) == 0, let image else {
            throw failure("the image cannot be decoded")
        }
        defer { exo_g_object_unref(image) }
        // Decoded once, here: the pipeline reads the file sequentially and could not be read again
        // for a second encoding or the placeholders.
        guard let decoded = vips_image_copy_memory(image) else { throw failure("the image cannot be decoded") }
        // A tile that failed (a truncated file) is reported here, not by copy_memory's result.
        // (The HEIF loader leaves a harmless "bad seek" there on every file: libheif probes past the end.)
        if loader != "VipsForeignLoadHeifBuffer", vips_error_buffer().pointee != 0 {
            exo_g_object_unref(decoded)
            throw failure("the image cannot be decoded")
        }
        return decoded
    }

    static func encode(_ image: UnsafeMutablePointer<VipsImage>, _ spec: ThumbnailSpec) throws -> Rendition {
        var converted: UnsafeMutablePointer<VipsImage>?
        guard exo_vips_srgb8(image, spec.format == .webp ? 1 : 0, &converted) == 0, let converted else {
            throw failure("the thumbnail cannot be converted to sRGB")
        }
        defer { exo_g_object_unref(converted) }
        guard let bare = exo_vips_bare(converted) else { throw failure("the thumbnail cannot be copied") }
        defer { exo_g_object_unref(bare) }
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        let status =
            switch spec.format {
            case .webp: exo_vips_webp(bare, webpQuality, &buffer, &length)
            case .jpeg: exo_vips_jpeg(bare, jpegQuality, &buffer, &length)
            }
        guard status == 0, let buffer else { throw failure("the thumbnail cannot be encoded") }
        defer { exo_g_free(buffer) }
        let encoded = Array(UnsafeRawBufferPointer(start: buffer, count: length))
        return Rendition(
            spec: spec, width: Int(vips_image_get_width(bare)), height: Int(vips_image_get_height(bare)),
            bytes: spec.format == .webp ? WebPMetadata.strip(encoded) : encoded)
    }

    /// BlurHash and dominant colour from the smallest thumbnail's pixels, flattened onto white.
    static func placeholders(_ image: UnsafeMutablePointer<VipsImage>) throws -> Placeholders {
        var converted: UnsafeMutablePointer<VipsImage>?
        guard exo_vips_srgb8(image, 0, &converted) == 0, let converted else { throw failure("the pixels cannot be read") }
        defer { exo_g_object_unref(converted) }
        var length = 0
        guard let memory = vips_image_write_to_memory(converted, &length) else { throw failure("the pixels cannot be read") }
        defer { exo_g_free(memory) }
        let (width, height) = (Int(vips_image_get_width(converted)), Int(vips_image_get_height(converted)))
        let channels = Int(vips_image_get_bands(converted))
        guard channels >= 3, length >= width * height * channels else { throw Refused(reason: "unexpected pixel layout") }
        let pixels = UnsafeBufferPointer(start: memory.assumingMemoryBound(to: UInt8.self), count: length)
        // Four components along the longer side, three along the shorter: the usual grid choice.
        let (x, y) = width >= height ? (4, 3) : (3, 4)
        return Placeholders(
            blurhash: Blurhash.encode(pixels: pixels, width: width, height: height, channels: channels, componentsX: x, componentsY: y),
            dominantColor: DominantColor.of(pixels: pixels, count: width * height, channels: channels))
    }

    /// libvips' own message, first line, cut short; the buffer is cleared for the next image.
    static func failure(_ what: String) -> Refused {
        let message = String(cString: vips_error_buffer()).split(separator: "\n").first.map(String.init) ?? ""
        vips_error_clear()
        return Refused(reason: message.isEmpty ? what : what + ": " + String(message.prefix(200)))
    }
}
