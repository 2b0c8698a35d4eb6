import ExosphereClient
import Foundation
import TestSupport
import Testing

/// The profile: typed custom fields, fetch with `If-None-Match`, save as a conditional merge
/// patch, conflicts, the schema.
@Suite(.testThreads, .liveServer("profile"), .serialized)  // tests count the server's answers in its metrics
struct ProfileTests {
    let server: LiveServer

    init() throws { server = try liveServer() }

    /// Mesosfer's tutorial screen: load, edit each typed field, save, change the password, sign
    /// in with the new one.
    @Test func theProfileScreen() async throws {
        let (client, email, password) = try await server.signedInClient(firstname: "Ayu")
        var user = try await client.fetchUser()
        #expect(user.firstname == "Ayu")
        #expect(user.date(forKey: "dateOfBirth") == nil)

        let newEmail = server.uniqueEmail("ayu.lestari")
        user.email = newEmail
        user.firstname = "Ayu"
        user.lastname = "Lestari"
        user.set(CalendarDate(year: 1994, month: 5, day: 17)!, forKey: "dateOfBirth")
        user.set(177.5, forKey: "height")
        user.set(78, forKey: "weight")
        user.set(true, forKey: "isMarried")
        #expect(user.hasUnsavedChanges)
        let saved = try await client.save(user)
        #expect(!saved.hasUnsavedChanges)
        // The address waits for the link mailed to it; the rest is saved.
        #expect(saved.email == email)
        #expect(saved.pendingEmail == newEmail)
        #expect(saved.lastname == "Lestari")
        #expect(saved.date(forKey: "dateOfBirth") == CalendarDate(year: 1994, month: 5, day: 17))
        #expect(saved.double(forKey: "height") == 177.5)
        #expect(saved.integer(forKey: "weight") == 78)
        #expect(saved.bool(forKey: "isMarried") == true)
        #expect(saved.boolean(forKey: "isMarried") == true)
        #expect(saved.updatedAt >= user.updatedAt)
        #expect(client.currentUser == saved)

        // The server typed the fields from what the client sent.
        let schema = try await client.schema()
        #expect(schema["dateOfBirth"] == .date)
        #expect(schema["height"] == .double)
        #expect(schema["weight"] == .integer)
        #expect(schema["isMarried"] == .boolean)

        // The link mailed to the new address applies it.
        let link = try #require(Exosphere.recoveryLink(from: try await server.mailedLink(to: newEmail, path: "verify-email")))
        let confirmed = try await client.confirmEmailChange(token: link.token)
        #expect(confirmed.email == newEmail && confirmed.pendingEmail == nil && confirmed.emailVerified)
        #expect(client.currentUser == confirmed)

        // A second edit of each field, read back by another device.
        var edited = confirmed
        edited.set(CalendarDate(year: 1994, month: 5, day: 18)!, forKey: "dateOfBirth")
        edited.set(176, forKey: "height")  // an integer literal is accepted for a double field
        edited.set(77, forKey: "weight")
        edited.set(false, forKey: "isMarried")
        try await client.save(edited)
        let other = try server.client()
        let seen = try await other.signIn(email: newEmail, password: password)
        #expect(seen.date(forKey: "dateOfBirth")?.description == "1994-05-18")
        #expect(seen.double(forKey: "height") == 176)
        #expect(seen.integer(forKey: "weight") == 77)
        #expect(seen.bool(forKey: "isMarried") == false)

        // The change-password form, then a sign-in with the new password.
        try await client.changePassword(old: password, new: "staple battery horse", confirm: "staple battery horse")
        let refused = await exosphereError { try await server.client().signIn(email: newEmail, password: password) }
        #expect(refused?.code == .invalidCredentials)
        let fresh = try server.client()
        let again = try await fresh.signIn(email: newEmail, password: "staple battery horse")
        #expect(again.id == user.id)
        #expect(again.date(forKey: "dateOfBirth") == CalendarDate(year: 1994, month: 5, day: 18))
        #expect(try await client.fetchUser().email == newEmail, "the client kept the token the password change returned")
        _ = email
    }

    @Test func fetchAsksWithIfNoneMatchAndA304ReturnsTheHeldCopy() async throws {
        let (client, email, password) = try await server.signedInClient()
        let first = try await client.fetchUser()
        #expect(first.etag != nil)
        let notModified = try await server.requests("GET", "/users/me", 304)
        let second = try await client.fetchUser()
        #expect(second == first)
        #expect(try await server.requests("GET", "/users/me", 304) == notModified + 1)

        // Another device changes the profile: the next fetch is a 200 with the new copy.
        let tablet = try server.client()
        var onTablet = try await tablet.signIn(email: email, password: password)
        onTablet.lastname = "Changed"
        try await tablet.save(onTablet)
        let third = try await client.fetchUser()
        #expect(third.lastname == "Changed")
        #expect(third.etag != first.etag)
        #expect(client.currentUser == third)
        #expect(try await server.requests("GET", "/users/me", 304) == notModified + 1)
    }

    @Test func saveSendsOnlyWhatChangedSoOtherFieldsWrittenMeanwhileSurvive() async throws {
        let (client, email, password) = try await server.signedInClient(data: ["height": 170.0, "weight": 70])
        let phone = try await client.fetchUser()
        let tablet = try server.client()
        try await tablet.signIn(email: email, password: password)
        var onTablet = try await tablet.fetchUser()
        onTablet.set(71, forKey: "weight")
        try await tablet.save(onTablet)

        // The phone's copy is stale: its save is a conflict carrying the server's copy.
        var onPhone = phone
        onPhone.set(171.5, forKey: "height")
        let conflict = await exosphereError { try await client.save(onPhone) }
        #expect(conflict?.status == 412)
        #expect(conflict?.isConflict == true)
        let serverCopy = try #require(conflict?.serverCopy)
        #expect(serverCopy.integer(forKey: "weight") == 71)
        #expect(serverCopy.double(forKey: "height") == 170)
        #expect(client.currentUser == serverCopy, "the conflict refreshed the held copy")

        // Rebased onto the server's copy, the phone's change goes in and the tablet's stays.
        let rebased = onPhone.rebased(onto: serverCopy)
        #expect(rebased.integer(forKey: "weight") == 71)
        #expect(rebased.double(forKey: "height") == 171.5)
        let saved = try await client.save(rebased)
        #expect(saved.integer(forKey: "weight") == 71)
        #expect(saved.double(forKey: "height") == 171.5)
    }

    @Test func aCopyFromSignInHasNoETagAndIsCheckedBeforeItsFirstSave() async throws {
        let (client, email, password) = try await server.signedInClient(firstname: "Ayu")
        let fromSignIn = try await server.client().signIn(email: email, password: password)
        #expect(fromSignIn.etag == nil)

        // Unchanged on the server: the save goes through.
        var first = try #require(client.currentUser)
        #expect(first.etag == nil)
        first.lastname = "Lestari"
        let saved = try await client.save(first)
        #expect(saved.lastname == "Lestari")
        #expect(saved.etag != nil)

        // Changed on the server since: a conflict, without a write.
        let other = try server.client()
        var stale = try await other.signIn(email: email, password: password)
        // No pause for the clock: the check before the save compares the copy's fields as read
        // (and its updatedAt), and the firstname below differs whatever the timestamps say.
        var newer = try await client.fetchUser()
        newer.firstname = "Ayu Changed"
        try await client.save(newer)
        stale.firstname = "Stale"
        let conflict = await exosphereError { try await other.save(stale) }
        #expect(conflict?.isConflict == true)
        #expect(conflict?.serverCopy?.firstname == "Ayu Changed")
        #expect(try await client.fetchUser().firstname == "Ayu Changed")
    }

    @Test func removingAFieldSendsNullAndNothingChangedSendsNothing() async throws {
        let (client, _, _) = try await server.signedInClient(data: ["nickname": "Ayu", "shoeSize": 38])
        var user = try await client.fetchUser()
        #expect(user.string(forKey: "nickname") == "Ayu")
        let patches = try await server.requests("PATCH", "/users/me", 200)
        #expect(try await client.save(user) == user, "nothing to save")
        #expect(try await server.requests("PATCH", "/users/me", 200) == patches)

        user.remove(forKey: "nickname")
        user["shoeSize"] = nil
        let saved = try await client.save(user)
        #expect(saved.data.isEmpty)
        #expect(saved.string(forKey: "nickname") == nil)
        #expect(try await server.requests("PATCH", "/users/me", 200) == patches + 1)
    }

    @Test func anotherAccountsCopyIsNotSavedIntoThisOne() async throws {
        let (client, _, _) = try await server.signedInClient(firstname: "Ayu")
        let (other, _, _) = try await server.signedInClient(firstname: "Budi")
        var foreign = try await other.fetchUser()
        foreign.firstname = "Changed"
        let error = await exosphereError { try await client.save(foreign) }
        #expect(error?.code == .invalidArgument)
        #expect(try await client.fetchUser().firstname == "Ayu")
        #expect(try await other.fetchUser().firstname == "Budi")
    }

    @Test func aDoubleWithoutFractionStillMakesADoubleField() async throws {
        let (client, _, _) = try await server.signedInClient()
        var user = try await client.fetchUser()
        let field = "wholeDouble\(UInt16.random(in: 1...UInt16.max))"
        user.set(180.0, forKey: field)
        user["literalDouble\(field.suffix(5))"] = 2.0
        try await client.save(user)
        let schema = try await client.schema()
        #expect(schema[field] == .double, "180.0 is sent as 180.0, not 180")
        #expect(schema["literalDouble\(field.suffix(5))"] == .double)
    }

    @Test func aValueOfTheWrongTypeIsRefusedWithTheFieldNamed() async throws {
        let (client, _, _) = try await server.signedInClient(data: ["luckyNumber": 7])
        var user = try await client.fetchUser()
        user.set("seven", forKey: "luckyNumber")
        let error = await exosphereError { try await client.save(user) }
        #expect(error?.status == 422)
        #expect(error?.code == .invalidType)
        #expect(error?.fieldErrors.first?.field == "data.luckyNumber")
        #expect(error?.fieldErrors.first?.code == .invalidType)
        #expect(try await client.fetchUser().integer(forKey: "luckyNumber") == 7, "nothing changed")

        user.set(Double.nan, forKey: "luckyNumber")
        let nan = await exosphereError { try await client.save(user) }
        #expect(nan?.code == .invalidArgument)
        #expect(nan?.status == nil)
    }

    @Test func dataDecodesIntoAnAppsOwnStruct() async throws {
        struct Profile: Decodable, Equatable {
            var dateOfBirth: CalendarDate
            var height: Double
            var weight: Int
            var isMarried: Bool
            var lastCheckup: Date?
            var nickname: String?
        }
        let checkup = Date(timeIntervalSince1970: 1_764_000_000.125)
        let (client, _, _) = try await server.signedInClient()
        var user = try await client.fetchUser()
        user.set(CalendarDate(year: 2000, month: 2, day: 29)!, forKey: "dateOfBirth")
        user.set(180, forKey: "height")
        user.set(78, forKey: "weight")
        user.set(false, forKey: "isMarried")
        user.set(checkup, forKey: "lastCheckup")
        user = try await client.save(user)
        let profile = try user.decodeData(as: Profile.self)
        #expect(
            profile
                == Profile(
                    dateOfBirth: CalendarDate(year: 2000, month: 2, day: 29)!, height: 180, weight: 78,
                    isMarried: false, lastCheckup: checkup, nickname: nil))
        #expect(user.dateTime(forKey: "lastCheckup") == checkup)

        struct Wrong: Decodable { var isMarried: String }
        let error = await exosphereError { _ = try user.decodeData(as: Wrong.self) }
        #expect(error?.code == .decodingFailed)
    }

    @Test func typedAccessorsAndLiterals() throws {
        // Values as the server would send them, without a server: through a stored session.
        let store = InMemorySessionStore()
        try store.save(
            Data(
                #"""
                {"version": 1, "accessToken": "t", "etag": "\"e\"", "user": {"id": "u", "email": "ayu@example.com",
                 "firstname": "Ayu", "lastname": "", "emailVerified": true, "createdAt": "2026-11-29T17:39:01.123Z",
                 "updatedAt": "2026-11-29T17:40:12.456Z", "data": {"dateOfBirth": "1994-05-17", "height": 177.5,
                 "weight": 78, "isMarried": true, "nickname": "Ayu", "seen": "2026-11-29T19:39:01.5+02:00", "whole": 2.0}}}
                """#.utf8))
        let client = try server.client(store: store)
        var user = try #require(client.currentUser)
        #expect(user.etag == "\"e\"")
        #expect(user.emailVerified)
        #expect(abs(user.createdAt.timeIntervalSince1970 - 1_795_973_941.123) < 1e-6)
        #expect(user.date(forKey: "dateOfBirth") == CalendarDate(year: 1994, month: 5, day: 17))
        #expect(user.string(forKey: "dateOfBirth") == "1994-05-17")
        #expect(user.double(forKey: "height") == 177.5)
        #expect(user.integer(forKey: "height") == nil)
        #expect(user.double(forKey: "weight") == 78)
        #expect(user.integer(forKey: "weight") == 78)
        #expect(user["whole"] == .double(2.0))
        #expect(user.integer(forKey: "whole") == 2)
        #expect(user.bool(forKey: "isMarried") == true)
        #expect(user.bool(forKey: "nickname") == nil)
        #expect(user.date(forKey: "nickname") == nil)
        #expect(user.dateTime(forKey: "seen") == Date(timeIntervalSince1970: 1_795_973_941.5), "+02:00 is two hours ahead of UTC")
        #expect(user["missing"] == nil)
        #expect(!user.hasUnsavedChanges)

        user["height"] = 180.0
        user["nickname"] = "Ayu L."
        user["isMarried"] = false
        user["weight"] = 80
        #expect(user["height"] == .double(180))
        #expect(user["height"]?.description == "180.0")
        #expect(user["nickname"]?.description == #""Ayu L.""#)
        #expect(user.hasUnsavedChanges)
        user["height"] = 177.5
        user["nickname"] = "Ayu"
        user["isMarried"] = true
        user["weight"] = 78
        #expect(!user.hasUnsavedChanges, "back to the server's values")
    }
}
