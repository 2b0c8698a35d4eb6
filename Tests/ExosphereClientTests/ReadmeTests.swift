@testable import ExosphereClient
import Foundation
import TestSupport
import Testing

/// docs/ios-client.md, "Using Exosphere from an iOS app": its code is ReadmeSamples.swift's, which
/// compiles with the tests and runs here against a live server.
@Suite(.testThreads, .liveServer("readme"), .serialized)
struct ReadmeTests {
    let server: LiveServer

    init() throws { server = try liveServer() }

    /// The iOS client guide, from the repository's root.
    static let guidePath = "/docs/ios-client.md"

    /// Every ```swift block of docs/ios-client.md (the whole file), in order.
    static func readmeBlocks() throws -> [String] {
        let guide = try String(contentsOfFile: LiveServer.repositoryRoot + guidePath, encoding: .utf8)
        var blocks: [String] = []
        var current: [String]?
        for line in guide.components(separatedBy: "\n") {
            if line == "```swift" {
                current = []
            } else if line == "```", let block = current {
                blocks.append(block.joined(separator: "\n"))
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    /// The parts of ReadmeSamples.swift between `// README begin` and `// README end`.
    static func sampleParts() throws -> [String] {
        let path = String(#filePath).replacingOccurrences(of: "ReadmeTests.swift", with: "ReadmeSamples.swift")
        let lines = try String(contentsOfFile: path, encoding: .utf8).components(separatedBy: "\n")
        var parts: [String] = []
        var current: [String]?
        for line in lines {
            if line == "// README begin" {
                current = []
            } else if line == "// README end", let part = current {
                parts.append(part.joined(separator: "\n"))
                current = nil
            } else {
                current?.append(line)
            }
        }
        return parts
    }

    @Test func theReadmesCodeIsTheCompiledSamples() throws {
        let blocks = try ReadmeTests.readmeBlocks()
        let parts = try ReadmeTests.sampleParts()
        #expect(parts.count >= 6)
        #expect(blocks.count == parts.count, "docs/ios-client.md blocks: \(blocks.count), sample parts: \(parts.count)")
        for (index, (block, part)) in zip(blocks, parts).enumerated() {
            #expect(block == part, "docs/ios-client.md block \(index + 1) differs from ReadmeSamples.swift")
        }
    }

    @Test func theSessionAndProfileSamplesRun() async throws {
        let app = try server.client()
        let session = await SessionModel(exosphere: app)
        let watching = Task { await session.watch() }
        defer { watching.cancel() }
        let email = server.uniqueEmail("readme")
        await session.signUp(email: email, password: "short", firstname: "Ayu")
        #expect(await session.message == "Use at least 8 characters.")
        await session.signUp(email: email, password: "correct horse battery", firstname: "Ayu")
        #expect(await session.user?.firstname == "Ayu")

        // The profile screen: load, edit every field, save.
        let profileScreen = await ProfileModel(exosphere: app)
        #expect(await profileScreen.firstname == "Ayu", "shown at once from the held copy")
        try await profileScreen.load()
        let birthday = CalendarDate(year: 1994, month: 5, day: 17)!
        await MainActor.run {
            profileScreen.lastname = "Lestari"
            profileScreen.dateOfBirth = birthday.date(in: .current)
            profileScreen.height = 177.5
            profileScreen.weight = 78
            profileScreen.isMarried = true
        }
        try await profileScreen.save()
        #expect(await profileScreen.message == "Saved.")
        let saved = try await app.fetchUser()
        #expect(saved.lastname == "Lestari")
        let decoded = try profile(of: saved)
        #expect(decoded.dateOfBirth == birthday)
        #expect(decoded.height == 177.5 && decoded.weight == 78 && decoded.isMarried == true)

        // Another device changes the profile meanwhile: the save merges.
        let tablet = try server.client()
        var onTablet = try await tablet.signIn(email: email, password: "correct horse battery")
        onTablet.set("Ayu L.", forKey: "nickname")
        try await tablet.save(onTablet)
        await MainActor.run { profileScreen.weight = 77 }
        try await profileScreen.save()
        #expect(await profileScreen.message == "Saved, with the changes made on another device.")
        let merged = try await app.fetchUser()
        #expect(merged.integer(forKey: "weight") == 77)
        #expect(merged.string(forKey: "nickname") == "Ayu L.")

        // The change-password form, then the sign-in screen with the new password.
        await profileScreen.changePassword(old: "wrong password", new: "staple battery horse", confirm: "staple battery horse")
        #expect(await profileScreen.message == "The current password is wrong.")
        await profileScreen.changePassword(old: "correct horse battery", new: "staple battery horse", confirm: "staple battery horse")
        #expect(await profileScreen.message == "Password changed; 1 other devices were signed out.")
        await session.signOut()
        #expect(await session.user == nil)
        await session.signIn(email: email, password: "correct horse battery")
        #expect(await session.message == "Wrong email or password.")
        await session.signIn(email: email, password: "staple battery horse")
        #expect(await session.user?.lastname == "Lestari")

        // The watcher saw the session end on the tablet's side.
        let tabletSession = await SessionModel(exosphere: tablet)
        let tabletWatching = Task { await tabletSession.watch() }
        defer { tabletWatching.cancel() }
        // Only once the watcher is subscribed is the session's end found out, or the watcher would
        // start after it and see only the signed-out state. (Its `user` says nothing of that: the
        // model starts with the client's stored user.)
        try await waitUntil { tablet.authStateSubscriberCount == 1 }
        let refused = await exosphereError { _ = try await tablet.fetchUser() }
        #expect(refused?.status == 401, "the password change ended this session: \(String(describing: refused))")
        try await waitUntil { await tabletSession.message == "Your session has ended. Please sign in again." }
        #expect(await tabletSession.user == nil)
    }

    @Test func theGallerySampleRuns() async throws {
        let (app, _, _) = try await server.signedInClient()
        let gallery = await GalleryModel(exosphere: app)
        let photos = (0..<3).map { Data(Build.jpeg([Build.app0JFIF, Build.sof(width: 40 + $0, height: 30), Build.sos])) }
        for photo in photos { try await gallery.upload(photo) }
        #expect(await gallery.images.map(\.width) == [42, 41, 40], "newest first")
        try await gallery.reload()
        #expect(await gallery.images.map(\.width) == [42, 41, 40])
        await MainActor.run { gallery.order = .oldestFirst }
        try await gallery.reload()
        #expect(await gallery.images.map(\.width) == [40, 41, 42])
        try await waitUntil { await gallery.uploadProgress == 1 }

        let first = try #require(await gallery.images.first)
        let revalidated = try await server.requests("GET", "/users/me/images/{id}", 304)
        #expect(try await gallery.data(for: first) == photos[0])
        #expect(try await server.requests("GET", "/users/me/images/{id}", 304) == revalidated + 1)
        try await gallery.delete(first)
        #expect(await gallery.images.map(\.width) == [41, 42])
        try await gallery.reload()
        #expect(await gallery.images.map(\.width) == [41, 42])
    }

    @Test func theLiveSampleRuns() async throws {
        let (phone, email, password) = try await server.signedInClient()
        let gallery = await GalleryModel(exosphere: phone)
        let live = await LiveModel(exosphere: phone, gallery: gallery)
        let running = Task { await live.run() }
        defer { running.cancel() }
        try await waitUntil { try await server.metric("exosphere_event_streams_open") >= 1 }

        // Another device of the same user adds a photo and renames the user.
        let tablet = try server.client()
        _ = try await tablet.signIn(email: email, password: password)
        let photo = Data(Build.jpeg([Build.app0JFIF, Build.sof(width: 50, height: 30), Build.sos]))
        let image = try await tablet.uploadImage(photo, contentType: .jpeg)
        try await waitUntil { await gallery.images.map(\.id) == [image.id] }
        var user = try await tablet.fetchUser()
        user.firstname = "Live"
        _ = try await tablet.save(user)
        try await waitUntil { await live.user?.firstname == "Live" }

        // The tablet signs every other session out: the phone's loop ends, signed out.
        _ = try await tablet.changePassword(old: password, new: password + " again")
        await running.value
        #expect(await live.user == nil)
        #expect(!phone.isSignedIn)
    }

    @Test func theRecoverySampleRuns() async throws {
        let (app, email, _) = try await server.signedInClient()
        let account = try #require(app.currentUser)
        let recovery = await RecoveryModel(exosphere: app)

        // The registration's verification link, opened in the app.
        let verification = try await server.mailedLink(to: email, path: "verify-email")
        await recovery.open(verification)
        #expect(await recovery.message == "Your email address is verified.")
        #expect(app.currentUser?.emailVerified == true)
        await recovery.resendVerification()
        #expect(await recovery.message == "Your email address is verified already.")
        await recovery.open(verification)
        #expect(await recovery.message == "This link has expired or was used already.")

        // "Forgot your password?" on a signed-out phone, and the mailed link opened there.
        let phone = try server.client()
        let session = await SessionModel(exosphere: phone)
        let watching = Task { await session.watch() }
        defer { watching.cancel() }
        let phoneRecovery = await RecoveryModel(exosphere: phone)
        await phoneRecovery.forgotPassword(email: email)
        #expect(await phoneRecovery.message == "If \(email) has an account, a link to choose a new password is on its way.")
        await phoneRecovery.open(URL(string: "https://api.example.com/users/me")!)
        #expect(await phoneRecovery.resetToken == nil, "not a mailed link")
        let reset = try await server.mailedLink(to: email, path: "reset-password")
        await phoneRecovery.open(reset)
        #expect(await phoneRecovery.resetToken != nil)
        await phoneRecovery.chooseNewPassword("short")
        #expect(await phoneRecovery.message == "Use at least 8 characters.")
        await phoneRecovery.chooseNewPassword("staple battery horse")
        #expect(await phoneRecovery.message == nil)
        #expect(await phoneRecovery.resetToken == nil)
        try await waitUntil { await session.user?.id == account.id }
        _ = try? await app.fetchUser()
        #expect(!app.isSignedIn, "the reset signed the other device out")

        // The used link, opened again.
        await phoneRecovery.open(reset)
        await phoneRecovery.chooseNewPassword("another good password")
        #expect(await phoneRecovery.message == "This link has expired or was used already. Ask for a new one.")
        #expect(await phoneRecovery.resetToken == nil)
        try await app.signIn(email: email, password: "staple battery horse")

        // A change of address: pending until the link mailed to the new address is opened, then
        // undone from the link mailed to the old one, which signs every device out.
        var user = try #require(app.currentUser)
        let newEmail = "moved-" + email
        user.email = newEmail
        let saved = try await app.save(user)
        #expect(saved.email == email && saved.pendingEmail == newEmail)
        await recovery.open(try await server.mailedLink(to: newEmail, path: "verify-email"))
        #expect(await recovery.message == "Your email address is verified.")
        #expect(app.currentUser?.email == newEmail && app.currentUser?.pendingEmail == nil)
        await recovery.open(try await server.mailedLink(to: email, path: "undo-email-change"))
        #expect(await recovery.undoToken != nil)
        await recovery.putOldAddressBack()
        #expect(await recovery.message == "\(email) is back on your account. Sign in again, and change your password.")
        #expect(await recovery.undoToken == nil)
        await #expect(throws: ExosphereError.self) { try await app.fetchUser() }
        #expect(!app.isSignedIn, "the undo ended every session")
        try await app.signIn(email: email, password: "staple battery horse")
    }
}

/// Polls `condition` every 10 ms for up to 30 s.
func waitUntil(_ condition: () async throws -> Bool, sourceLocation: SourceLocation = #_sourceLocation) async throws {
    let deadline = Date().addingTimeInterval(30)
    while Date() < deadline {
        if try await condition() { return }
        try await Task.sleep(nanoseconds: 10_000_000)
    }
    Issue.record("the condition did not become true within 30 s", sourceLocation: sourceLocation)
}
