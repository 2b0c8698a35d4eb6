@testable import API
import TestSupport
import Testing

@Suite(.testThreads) struct ClientAddressTests {
    let proxy: Set<String> = ["10.0.0.1"]

    @Test func anUntrustedPeerIsTheClientWhateverItForwards() {
        #expect(ClientAddress.resolve(peer: "198.51.100.9", forwardedFor: ["203.0.113.7"], trusted: proxy) == "198.51.100.9")
        #expect(ClientAddress.resolve(peer: "198.51.100.9", forwardedFor: ["203.0.113.7"], trusted: []) == "198.51.100.9")
        // Not even when it names a trusted proxy as its client.
        #expect(ClientAddress.resolve(peer: "198.51.100.9", forwardedFor: ["10.0.0.1"], trusted: proxy) == "198.51.100.9")
        #expect(ClientAddress.resolve(peer: "unknown", forwardedFor: ["203.0.113.7"], trusted: proxy) == "unknown")
    }

    @Test func aTrustedPeerNamesItsClient() {
        #expect(ClientAddress.resolve(peer: "10.0.0.1", forwardedFor: ["203.0.113.7"], trusted: proxy) == "203.0.113.7")
        #expect(ClientAddress.resolve(peer: "10.0.0.1", forwardedFor: [" 203.0.113.7\t"], trusted: proxy) == "203.0.113.7")
    }

    @Test func aTrustedPeerWithoutAUsableHeaderIsTheClient() {
        #expect(ClientAddress.resolve(peer: "10.0.0.1", forwardedFor: [], trusted: proxy) == "10.0.0.1")
        #expect(ClientAddress.resolve(peer: "10.0.0.1", forwardedFor: [""], trusted: proxy) == "10.0.0.1")
        #expect(ClientAddress.resolve(peer: "10.0.0.1", forwardedFor: [" , ,"], trusted: proxy) == "10.0.0.1")
        // Only trusted proxies in the chain: the request came from one of them.
        #expect(ClientAddress.resolve(peer: "10.0.0.1", forwardedFor: ["10.0.0.1"], trusted: proxy) == "10.0.0.1")
    }

    @Test func theRightMostUntrustedHopWinsSoTheClientCannotForgeIt() {
        // The client sent "1.1.1.1"; our proxy appended the address it saw.
        #expect(ClientAddress.resolve(peer: "10.0.0.1", forwardedFor: ["1.1.1.1, 203.0.113.7"], trusted: proxy) == "203.0.113.7")
        let chain: Set<String> = ["10.0.0.1", "10.0.0.2"]
        #expect(ClientAddress.resolve(peer: "10.0.0.1", forwardedFor: ["1.1.1.1, 203.0.113.7, 10.0.0.2"], trusted: chain) == "203.0.113.7")
        #expect(ClientAddress.resolve(peer: "10.0.0.1", forwardedFor: ["1.1.1.1,203.0.113.7,10.0.0.2,10.0.0.1"], trusted: chain) == "203.0.113.7")
    }

    @Test func severalFieldsFormOneListInOrder() {
        // haproxy's `option forwardfor` adds its own field after the client's.
        #expect(ClientAddress.resolve(peer: "10.0.0.1", forwardedFor: ["1.1.1.1", "203.0.113.7"], trusted: proxy) == "203.0.113.7")
        #expect(ClientAddress.resolve(peer: "10.0.0.1", forwardedFor: ["1.1.1.1, 2.2.2.2", "203.0.113.7"], trusted: proxy) == "203.0.113.7")
        #expect(ClientAddress.resolve(peer: "10.0.0.1", forwardedFor: ["203.0.113.7", "10.0.0.1"], trusted: proxy) == "203.0.113.7")
    }

    @Test(arguments: [
        "example.com", "203.0.113.7:8080", "[2001:db8::1]", "[2001:db8::1]:443", "fe80::1%eth0", "unknown",
        "203.0.113", "203.0.113.256", "203.0.113.07", "1.2.3.4.5", "::ffff:1.2.3.4.5", "2001:db8:::1", "_hidden",
        "1.2.3.4\u{0}", "1.2.3.4 5.6.7.8",
    ])
    func aHopThatIsNotAnAddressFallsBackToThePeer(_ hop: String) {
        #expect(ClientAddress.resolve(peer: "10.0.0.1", forwardedFor: [hop], trusted: proxy) == "10.0.0.1")
        // Nothing to the left of an unusable hop is believed either.
        #expect(ClientAddress.resolve(peer: "10.0.0.1", forwardedFor: ["203.0.113.7, \(hop)"], trusted: proxy) == "10.0.0.1")
    }

    @Test func addressesAreCanonicalSoOneClientHasOneCounter() {
        let v6: Set<String> = ["2001:db8::53"]
        for spelling in ["2001:db8::1", "2001:DB8::1", "2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8:0::0:1"] {
            #expect(ClientAddress.resolve(peer: "2001:db8::53", forwardedFor: [spelling], trusted: v6) == "2001:db8::1")
        }
        #expect(ClientAddress.resolve(peer: "10.0.0.1", forwardedFor: ["::ffff:203.0.113.7"], trusted: proxy) == "203.0.113.7")
        #expect(ClientAddress.resolve(peer: "10.0.0.1", forwardedFor: ["::FFFF:cb00:7107"], trusted: proxy) == "203.0.113.7")
    }

    @Test func aPeerIsRecognisedInAnySpelling() {
        // A dual-stack socket reports an IPv4 peer as IPv4-mapped IPv6.
        #expect(ClientAddress.resolve(peer: "::ffff:10.0.0.1", forwardedFor: ["203.0.113.7"], trusted: proxy) == "203.0.113.7")
        let v6: Set<String> = [ClientAddress.canonical("2001:DB8:0:0::53")!]
        #expect(ClientAddress.resolve(peer: "2001:db8::53", forwardedFor: ["203.0.113.7"], trusted: v6) == "203.0.113.7")
        #expect(ClientAddress.resolve(peer: "::1", forwardedFor: ["2001:db8::7"], trusted: ["::1"]) == "2001:db8::7")
    }

    @Test func canonicalForms() {
        #expect(ClientAddress.canonical("127.0.0.1") == "127.0.0.1")
        #expect(ClientAddress.canonical("::1") == "::1")
        #expect(ClientAddress.canonical("0:0:0:0:0:0:0:1") == "::1")
        #expect(ClientAddress.canonical("::ffff:127.0.0.1") == "127.0.0.1")
        #expect(ClientAddress.canonical("") == nil)
        #expect(ClientAddress.canonical("localhost") == nil)
        #expect(ClientAddress.canonical(String(repeating: "1", count: 100)) == nil)
    }

    // MARK: - Configuration

    @Test(arguments: [
        ("192.0.2.7", "192.0.2.7"),
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
        ("2001:DB8:1:2::ff", "2001:db8:1:2::/64"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
        ("::1", "::/64"),
        ("unknown", "unknown"),
    ])
    func throttlesGroupIPv6By64(_ address: String, _ group: String) {
        #expect(ClientAddress.throttleGroup(address) == group)
    }
}
