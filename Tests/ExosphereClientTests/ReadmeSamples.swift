// The code of docs/ios-client.md ("Using Exosphere from an iOS app"), compiled with the tests and
// run by ReadmeTests against a live server. Each part between "README begin" and "README end" is
// one of that guide's swift code blocks, in order, word for word (ReadmeTests checks it).

// README begin
import ExosphereClient
import Foundation

/// One client for the whole app. The session is kept in the Keychain, so the user stays
/// signed in across launches.
let exosphere = Exosphere(baseURL: URL(string: "https://api.example.com")!)
// README end

// README begin
/// The app's root: the sign-in screen, or the profile when signed in.
@MainActor
final class SessionModel {
    let exosphere: Exosphere
    private(set) var user: User?
    var message: String?

    init(exosphere: Exosphere) {
        self.exosphere = exosphere
        user = exosphere.currentUser  // restored from the Keychain: no sign-in screen
    }

    /// Follows sign-ins and sign-outs, also a session that ended on the server.
    func watch() async {
        for await change in exosphere.authStateChanges() {
            switch change {
            case .initial(let user):
                self.user = user
            case .signedIn(let user):
                self.user = user
            case .signedOut, .accountDeleted:
                user = nil
            case .sessionExpired:
                user = nil
                message = "Your session has ended. Please sign in again."
            }
        }
    }

    func signUp(email: String, password: String, firstname: String) async {
        do {
            user = try await exosphere.register(email: email, password: password, firstname: firstname)
        } catch let error as ExosphereError where error.code == .emailTaken {
            message = "This email address already has an account."
        } catch let error as ExosphereError where error.code == .weakPassword {
            message = "Use at least 8 characters."
        } catch {
            message = "Could not sign up. Please try again."
        }
    }

    func signIn(email: String, password: String) async {
        do {
            user = try await exosphere.signIn(email: email, password: password)
        } catch let error as ExosphereError where error.code == .invalidCredentials {
            message = "Wrong email or password."
        } catch let error as ExosphereError where error.code == .tooManyAttempts {
            message = "Too many attempts. Try again in \(Int(error.retryAfter ?? 60) / 60 + 1) minutes."
        } catch {
            message = "Could not sign in. Please try again."
        }
    }

    func signOut() async {
        // Signed out on this device even when the server cannot be told.
        do { try await exosphere.signOut() } catch {}
        user = nil
    }
}
// README end

// README begin
/// The profile screen: a form bound to these properties.
@MainActor
final class ProfileModel {
    let exosphere: Exosphere
    private var user: User?
    var email = ""
    var firstname = ""
    var lastname = ""
    var dateOfBirth = Date()  // what a DatePicker shows, in the device's time zone
    var height = 0.0
    var weight = 0
    var isMarried = false
    var message: String?

    init(exosphere: Exosphere) {
        self.exosphere = exosphere
        if let user = exosphere.currentUser { show(user) }  // at once, before the network answers
    }

    /// Refreshes the form; when nothing changed the server answers 304 and nothing is decoded.
    func load() async throws {
        show(try await exosphere.fetchUser())
    }

    private func show(_ user: User) {
        self.user = user
        email = user.email ?? ""
        firstname = user.firstname
        lastname = user.lastname
        dateOfBirth = user.date(forKey: "dateOfBirth")?.date(in: .current) ?? Date()
        height = user.double(forKey: "height") ?? 0
        weight = user.integer(forKey: "weight") ?? 0
        isMarried = user.bool(forKey: "isMarried") ?? false
    }
}
// README end

// README begin
extension ProfileModel {
    /// Saves the form. Only the fields that changed are sent, and only if nobody changed the
    /// profile since it was loaded.
    func save() async throws {
        guard var user else { return }
        user.email = email.isEmpty ? user.email : email
        user.firstname = firstname
        user.lastname = lastname
        user.set(CalendarDate(dateOfBirth, in: .current), forKey: "dateOfBirth")
        user.set(height, forKey: "height")
        user.set(weight, forKey: "weight")
        user.set(isMarried, forKey: "isMarried")
        do {
            show(try await exosphere.save(user))
            message = "Saved."
        } catch let error as ExosphereError where error.isConflict {
            // Changed on another device meanwhile: apply these edits on top of that copy.
            guard let serverCopy = error.serverCopy else { throw error }
            show(try await exosphere.save(user.rebased(onto: serverCopy)))
            message = "Saved, with the changes made on another device."
        } catch let error as ExosphereError where error.code == .emailTaken {
            message = "This email address already has an account."
        }
    }

    /// The change-password form.
    func changePassword(old: String, new: String, confirm: String) async {
        do {
            let others = try await exosphere.changePassword(old: old, new: new, confirm: confirm)
            message = "Password changed; \(others) other devices were signed out."
        } catch let error as ExosphereError {
            switch error.code {
            case .invalidPassword: message = "The current password is wrong."
            case .passwordMismatch: message = "The new passwords differ."
            case .weakPassword: message = "Use at least 8 characters."
            case .passwordUnchanged: message = "The new password is the current one."
            default: message = "Could not change the password."
            }
        } catch {
            message = "Could not change the password."
        }
    }
}
// README end

// README begin
/// The custom fields decoded at once into the app's own type.
struct Profile: Decodable {
    var dateOfBirth: CalendarDate?
    var height: Double?
    var weight: Int?
    var isMarried: Bool?
}

func profile(of user: User) throws -> Profile {
    try user.decodeData(as: Profile.self)
}
// README end

// README begin
/// The image grid: the user's photos, oldest or newest first.
@MainActor
final class GalleryModel {
    let exosphere: Exosphere
    private(set) var images: [UserImage] = []
    var order = ImageOrder.newestFirst
    private(set) var uploadProgress = 0.0

    init(exosphere: Exosphere) {
        self.exosphere = exosphere
    }

    func reload() async throws {
        var loaded: [UserImage] = []
        for try await image in exosphere.images(order: order) {
            loaded.append(image)
        }
        images = loaded
    }

    /// Uploads a photo, e.g. the `Data` of a `PhotosPicker` item.
    func upload(_ photo: Data) async throws {
        let image = try await exosphere.uploadImage(photo, contentType: .jpeg) { progress in
            Task { @MainActor in self.uploadProgress = progress.fractionCompleted }
        }
        if order == .newestFirst { images.insert(image, at: 0) } else { images.append(image) }
    }

    /// A cell's bytes: from the disk cache, revalidated with the server (a 304 sends no bytes).
    func data(for image: UserImage) async throws -> Data {
        try await exosphere.downloadImage(image)
    }

    func delete(_ image: UserImage) async throws {
        try await exosphere.deleteImage(image)
        images.removeAll { $0.id == image.id }
    }
}
// README end

// README begin
/// Keeps the grid and the profile current while the screen is shown: `.task { await live.run() }`.
@MainActor
final class LiveModel {
    let exosphere: Exosphere
    let gallery: GalleryModel
    private(set) var user: User?

    init(exosphere: Exosphere, gallery: GalleryModel) {
        self.exosphere = exosphere
        self.gallery = gallery
    }

    func run() async {
        do {
            for try await change in exosphere.liveChanges() {
                switch change {
                case .profile(let user): self.user = user
                case .imageAdded, .imageDeleted, .resync: try await gallery.reload()
                case .sessionEnded: user = nil  // signed out: show the sign-in screen
                }
            }
        } catch {
            // not signed in, or the deployment cannot stream (501): nothing live on this screen
        }
    }
}
// README end

// README begin
/// "Forgot your password?", and the mailed links, which the app opens itself when the deployment
/// lists it (`--apple-app-ids`): pass `onOpenURL`'s URL to `open(_:)`.
@MainActor
final class RecoveryModel {
    let exosphere: Exosphere
    private(set) var resetToken: String?  // set: show the new-password form
    private(set) var undoToken: String?  // set: ask "put my old address back?"
    var message: String?

    init(exosphere: Exosphere) {
        self.exosphere = exosphere
    }

    /// The same answer whether or not the address has an account.
    func forgotPassword(email: String) async {
        do {
            try await exosphere.requestPasswordReset(email: email)
            message = "If \(email) has an account, a link to choose a new password is on its way."
        } catch {
            message = "Could not send the link. Please try again."
        }
    }

    /// `https://…/reset-password#token=…`, `…/verify-email#token=…` or `…/undo-email-change#token=…`.
    func open(_ url: URL) async {
        guard let link = Exosphere.recoveryLink(from: url) else { return }
        switch link.kind {
        case .passwordReset:
            resetToken = link.token
        case .emailVerification:
            do {
                try await exosphere.verifyEmail(token: link.token)  // updates currentUser
                message = "Your email address is verified."
            } catch let error as ExosphereError where error.code == .invalidVerificationToken {
                message = "This link has expired or was used already."
            } catch {
                message = "Could not verify the address. Please try again."
            }
        case .emailChangeUndo:
            // Ask first ("This was not me"), then: every session ends, this one too.
            undoToken = link.token
        }
    }

    /// The new-password form. Success signs this device in (and every other one out), so the
    /// `SessionModel` shows the profile.
    func chooseNewPassword(_ newPassword: String) async {
        guard let resetToken else { return }
        do {
            try await exosphere.confirmPasswordReset(token: resetToken, newPassword: newPassword)
            self.resetToken = nil
            message = nil
        } catch let error as ExosphereError where error.code == .weakPassword {
            message = "Use at least 8 characters."
        } catch let error as ExosphereError where error.code == .invalidResetToken {
            self.resetToken = nil
            message = "This link has expired or was used already. Ask for a new one."
        } catch {
            message = "Could not set the password. Please try again."
        }
    }

    /// "This was not me": the old address is back and every device is signed out, this one too.
    func putOldAddressBack() async {
        guard let undoToken else { return }
        do {
            let email = try await exosphere.undoEmailChange(token: undoToken)
            message = "\(email) is back on your account. Sign in again, and change your password."
        } catch let error as ExosphereError where error.code == .invalidUndoToken {
            message = "This link has expired or was used already."
        } catch {
            message = "Could not undo the change. Please try again."
        }
        self.undoToken = nil
    }

    /// "Send the verification mail again."
    func resendVerification() async {
        do {
            try await exosphere.resendVerificationEmail()
            message = "A new link is on its way."
        } catch let error as ExosphereError where error.code == .alreadyVerified {
            message = "Your email address is verified already."
        } catch {
            message = "Could not send the mail. Please try again."
        }
    }
}
// README end
