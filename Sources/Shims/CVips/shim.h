#ifndef EXOSPHERE_CVIPS_SHIM_H
#define EXOSPHERE_CVIPS_SHIM_H
// libvips for the thumbnail helper process (`exosphere-thumbnailer`); the server never calls it.
// Swift cannot call C variadic functions, so each libvips call with options is wrapped here with
// fixed arguments.
#include <vips/vips.h>

/// Starts libvips for one image at a time: one worker thread, no operation cache, and every
/// loader blocked but the five formats the API accepts (so a crafted file can never reach the
/// ImageMagick, PDF, SVG, TIFF, FITS… loaders).
static inline int exo_vips_start(const char *argv0) {
    if (VIPS_INIT(argv0)) return -1;
    // No ORC: its JIT needs memory that is writable and executable, which the helper's seccomp
    // filter refuses (a decoder exploit must not get a place to write code and run it).
    vips_vector_set_enabled(FALSE);
    vips_concurrency_set(1);
    vips_cache_set_max(0);
    vips_cache_set_max_mem(0);
    vips_cache_set_max_files(0);
    vips_block_untrusted_set(TRUE);
    vips_operation_block_set("VipsForeignLoad", TRUE);
    vips_operation_block_set("VipsForeignLoadJpeg", FALSE);
    vips_operation_block_set("VipsForeignLoadPng", FALSE);
    vips_operation_block_set("VipsForeignLoadWebp", FALSE);
    vips_operation_block_set("VipsForeignLoadNsgif", FALSE);
    vips_operation_block_set("VipsForeignLoadHeif", FALSE);
    return 0;
}

/// The header only (nothing is decoded): dimensions before the pixel limit is checked.
static inline VipsImage *exo_vips_header(const void *buf, size_t len) {
    return vips_image_new_from_buffer(buf, len, "", NULL);
}

/// Shrink-on-load thumbnail fitting size × size, never enlarged, EXIF orientation applied,
/// converted to sRGB; a truncated file is an error, not a grey half image.
static inline int exo_vips_thumbnail(void *buf, size_t len, int size, VipsImage **out) {
    return vips_thumbnail_buffer(buf, len, out, size, "height", size, "size", VIPS_SIZE_DOWN,
                                 "export_profile", "srgb", "fail_on", VIPS_FAIL_ON_TRUNCATED, NULL);
}

/// 8-bit sRGB, three bands, or four when `keep_alpha` and the image has an alpha channel (an
/// alpha channel that is not kept is flattened onto white).
static inline int exo_vips_srgb8(VipsImage *in, int keep_alpha, VipsImage **out) {
    VipsImage *t[4] = {NULL, NULL, NULL, NULL};
    VipsImage *current = in;
    g_object_ref(current);
    int failed = 0;
    if (vips_image_get_interpretation(current) != VIPS_INTERPRETATION_sRGB) {
        if (vips_colourspace(current, &t[0], VIPS_INTERPRETATION_sRGB, NULL)) failed = 1;
        else { g_object_unref(current); current = t[0]; }
    }
    if (!failed && vips_image_hasalpha(current) && !keep_alpha) {
        VipsArrayDouble *white = vips_array_double_newv(3, 255.0, 255.0, 255.0);
        if (vips_flatten(current, &t[1], "background", white, NULL)) failed = 1;
        else { g_object_unref(current); current = t[1]; }
        vips_area_unref(VIPS_AREA(white));
    }
    if (!failed && vips_image_get_format(current) != VIPS_FORMAT_UCHAR) {
        if (vips_cast(current, &t[2], VIPS_FORMAT_UCHAR, NULL)) failed = 1;
        else { g_object_unref(current); current = t[2]; }
    }
    if (!failed && vips_image_get_bands(current) > (keep_alpha && vips_image_hasalpha(current) ? 4 : 3)) {
        if (vips_extract_band(current, &t[3], 0, "n", 3, NULL)) failed = 1;
        else { g_object_unref(current); current = t[3]; }
    }
    if (failed) { g_object_unref(current); return -1; }
    *out = current;
    return 0;
}

/// The pixels alone, with no metadata at all: no EXIF, GPS, XMP, IPTC or ICC block can reach an
/// encoder (8.14's webpsave keeps EXIF and ICC even when told to strip).
static inline VipsImage *exo_vips_bare(VipsImage *in) {
    size_t size = 0;
    void *data = vips_image_write_to_memory(in, &size);
    if (!data) return NULL;
    VipsImage *out = vips_image_new_from_memory_copy(data, size, vips_image_get_width(in), vips_image_get_height(in),
                                                     vips_image_get_bands(in), vips_image_get_format(in));
    g_free(data);
    return out;
}

/// Scales by `scale` (below 1) for the placeholder's small copy.
static inline int exo_vips_resize(VipsImage *in, double scale, VipsImage **out) {
    return vips_resize(in, out, scale, NULL);
}

/// Metadata-free encodings: `strip` drops EXIF, GPS, XMP and ICC blocks.
static inline int exo_vips_webp(VipsImage *in, int quality, void **buf, size_t *len) {
    return vips_webpsave_buffer(in, buf, len, "Q", quality, "strip", TRUE, "effort", 2, NULL);
}
static inline int exo_vips_jpeg(VipsImage *in, int quality, void **buf, size_t *len) {
    return vips_jpegsave_buffer(in, buf, len, "Q", quality, "strip", TRUE, "optimize_coding", TRUE,
                                "interlace", FALSE, NULL);
}

static inline void exo_g_free(void *p) { g_free(p); }
static inline void exo_g_object_unref(void *p) { if (p) g_object_unref(p); }
#endif
