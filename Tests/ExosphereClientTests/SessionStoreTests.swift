import ExosphereClient
import Foundation
import TestSupport
import Testing

@Suite(.testThreads)
struct SessionStoreTests {
    @Test func theFileStoreKeepsTheSessionForItsOwnerOnly() throws {
        let directory = try temporaryDirectory("file-store")
        let file = directory.appendingPathComponent("nested/dir/app.session")
        let store = FileSessionStore(url: file)
        #expect(try store.load() == nil, "nothing stored yet")
        try store.clear()  // nothing to clear is fine

        try store.save(Data("first".utf8))
        #expect(try store.load() == Data("first".utf8))
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let parent = try FileManager.default.attributesOfItem(atPath: file.deletingLastPathComponent().path)
        #expect((parent[.posixPermissions] as? NSNumber)?.intValue == 0o700)

        try store.save(Data("second, longer than the first".utf8))
        #expect(try store.load() == Data("second, longer than the first".utf8))
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: file.deletingLastPathComponent().path) == ["app.session"],
            "no temporary file left behind")
        try store.clear()
        #expect(try store.load() == nil)
        #expect(!FileManager.default.fileExists(atPath: file.path))
    }

    @Test func aFileStoreThatCannotWriteSaysSo() throws {
        let directory = try temporaryDirectory("file-store-blocked")
        let blocker = directory.appendingPathComponent("not-a-directory")
        try Data().write(to: blocker)
        let store = FileSessionStore(url: blocker.appendingPathComponent("app.session"))
        #expect(throws: (any Error).self) { try store.save(Data("x".utf8)) }
    }

    @Test func theInMemoryStoreForgetsWithTheProcess() throws {
        let store = InMemorySessionStore()
        #expect(try store.load() == nil)
        try store.save(Data("x".utf8))
        #expect(try store.load() == Data("x".utf8))
        try store.clear()
        #expect(try store.load() == nil)
    }

    @Test func theDefaultStoreOnLinuxIsAFileNamedAfterTheServer() throws {
        let store = Exosphere.defaultSessionStore(for: URL(string: "https://api.example.com:8443/v1/")!)
        let file = try #require(store as? FileSessionStore)
        #expect(file.url.lastPathComponent == "api.example.com-8443_v1.session")
        #expect(file.url.path.hasSuffix("/exosphere/api.example.com-8443_v1.session"))
        #expect(FileSessionStore.defaultURL(name: "x").deletingLastPathComponent().lastPathComponent == "exosphere")
    }
}
