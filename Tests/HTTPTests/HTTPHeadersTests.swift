import HTTP
import TestSupport
import Testing

@Suite(.testThreads) struct HTTPHeadersTests {
    @Test func emptyHeaders() {
        let headers = HTTPHeaders()
        #expect(headers.isEmpty)
        #expect(headers.count == 0)
        #expect(headers["Host"] == nil)
        #expect(headers.values("Host").isEmpty)
        #expect(!headers.contains("Host"))
    }

    @Test func lookupIgnoresASCIICaseOnly() {
        let headers = HTTPHeaders([("Content-Type", "text/plain"), ("X-Ä", "umlaut")])
        #expect(headers["content-type"] == "text/plain")
        #expect(headers["CONTENT-TYPE"] == "text/plain")
        #expect(headers["Content-Typ"] == nil)
        #expect(headers["Content-Types"] == nil)
        #expect(headers["x-Ä"] == "umlaut")
        #expect(headers["x-ä"] == nil)  // only ASCII letters fold
    }

    @Test func orderAndDuplicatesAreKept() {
        let headers = HTTPHeaders([("A", "1"), ("B", "2"), ("a", "3")])
        #expect(headers.count == 3)
        #expect(headers["A"] == "1")
        #expect(headers.values("a") == ["1", "3"])
        #expect(headers.map { "\($0.name)=\($0.value)" } == ["A=1", "B=2", "a=3"])
    }

    @Test func removeAndReplace() {
        var headers = HTTPHeaders([("A", "1"), ("B", "2"), ("a", "3")])
        headers.remove(name: "A")
        #expect(headers.map(\.name) == ["B"])
        headers.replaceOrAdd(name: "b", value: "new")
        #expect(headers.map { "\($0.name)=\($0.value)" } == ["b=new"])
        headers.replaceOrAdd(name: "C", value: "")
        #expect(headers["c"] == "")
        #expect(headers.contains("C"))
        headers.remove(name: "missing")
        #expect(headers.count == 2)
    }

    @Test func addAppends() {
        var headers = HTTPHeaders()
        headers.add(name: "Set-Cookie", value: "a=1")
        headers.add(name: "Set-Cookie", value: "b=2")
        #expect(headers.values("set-cookie") == ["a=1", "b=2"])
        #expect(!headers.isEmpty)
        // Reserving room changes nothing visible.
        headers.reserveCapacity(fields: 4, bytes: 160)
        headers.add(name: "ETag", value: "\"x\r\ny\"")
        #expect(headers.map { "\($0.name)=\($0.value)" } == ["Set-Cookie=a=1", "Set-Cookie=b=2", "ETag=\"x  y\""])
    }
}
