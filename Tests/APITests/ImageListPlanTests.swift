import Cryptography
import FoundationEssentials
import JSON
import Postgres
import TestSupport
import Testing

@testable import Images

/// The image list's plans at 100,000 images of one user (and others' beside them): both orders,
/// first page and later ones, are read from `images_user_created` in index order, the newest
/// first by scanning it backwards. No sort: a page costs its own rows, wherever it is.
@Suite(.testThreads) struct ImageListPlanTests {
    @Test func bothOrdersArePagedFromTheIndexWithoutASort() throws {
        let server = try TestServer("image_plans")
        defer { server.shutdown() }
        let account = try server.register()
        let other = try server.register()
        let userID = try #require(UUID(uuidString: account.id))
        let connection = try PostgresConnection(configuration: try PostgresConfiguration(connectionString: server.databaseURL))
        defer { connection.close() }
        for (id, count) in [(account.id, 100_000), (other.id, 20_000)] {
            try connection.execute(
                """
                INSERT INTO images (id, user_id, content_type, byte_size, sha256, width, height, storage, created_at)
                SELECT gen_random_uuid(), \(id)::uuid, 'image/png', 100, sha256(g::text::bytea), 10, 10, 'filesystem',
                       now() - g * interval '1 second'
                FROM generate_series(1, \(count)) g
                """)
        }
        try connection.execute("ANALYZE images")
        let middle = try connection.query(
            """
            SELECT (extract(epoch FROM created_at) * 1000000)::bigint, id FROM images
            WHERE user_id = \(userID) ORDER BY created_at, id OFFSET 50000 LIMIT 1
            """)[0]
        let cursor = KeysetCursor(microseconds: try middle.decode(Int64.self, at: 0), id: try middle.decode(UUID.self, at: 1))
        for order in ImageOrder.allCases {
            for after in [nil, cursor] {
                let query = ImageRepository.pageQuery(userID: userID, order: order, after: after, limit: 51)
                let explained = try connection.query(
                    PostgresStatement(unsafeSQL: "EXPLAIN (FORMAT JSON) " + query.sql), query.binds)[0].decode(String.self, at: 0)
                let plan = try JSONParser.parse(explained)[0]?["Plan"]
                let nodes = Self.nodes(plan)
                let what = "\(order), \(after == nil ? "first page" : "after a cursor"): \(nodes.map(\.type))"
                #expect(!nodes.contains { $0.type.contains("Sort") }, "\(what)")
                let scan = try #require(nodes.first { $0.index == "images_user_created" }, "\(what)")
                #expect(scan.direction == (order == .newest ? "Backward" : "Forward"), "\(what)")
            }
        }
        // And the pages are right at that size: 51 rows, in order, continuing from the cursor.
        let newest = try ImageRepository.page(connection, userID: userID, order: .newest, after: cursor, limit: 51)
        #expect(newest.count == 51)
        // (A second apart each: no two share an instant.)
        #expect(zip(newest, newest.dropFirst()).allSatisfy { $0.createdAtMicroseconds > $1.createdAtMicroseconds })
        #expect(newest.first?.createdAtMicroseconds == cursor.microseconds - 1_000_000)
    }

    /// Every node of a JSON plan, depth first: its type, index and scan direction.
    static func nodes(_ plan: JSONValue?) -> [(type: String, index: String?, direction: String?)] {
        guard let plan else { return [] }
        let own = (plan["Node Type"]?.stringValue ?? "?", plan["Index Name"]?.stringValue, plan["Scan Direction"]?.stringValue)
        return [own] + (plan["Plans"]?.arrayValue ?? []).flatMap { nodes($0) }
    }
}
