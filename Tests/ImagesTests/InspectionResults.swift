@testable import Images

/// The code of a failed inspection, or nil when it succeeded.
func code(_ result: Result<ImageInfo, ImageError>) -> ImageError.Code? {
    if case .failure(let error) = result { return error.code }
    return nil
}

func size(_ result: Result<ImageInfo, ImageError>) -> [Int]? {
    if case .success(let info) = result { return [info.width, info.height] }
    return nil
}
