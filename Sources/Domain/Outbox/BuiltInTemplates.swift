/// The mails as Exosphere writes them unless a deployment's templates say otherwise.
enum BuiltInTemplates {
    static let all: [MailKind: MailTemplates.Template] = [
        .verifyEmail: .init(
            subject: "Verify your email address for {{appName}}",
            text: """
                Hi {{name}},

                Please confirm that {{email}} is your address for {{appName}} by opening this link
                within 24 hours:

                {{link}}

                If you did not sign up or change your address, you can ignore this mail.
                """,
            html: page(
                """
                <p>Hi {{name}},</p>
                <p>Please confirm that <strong>{{email}}</strong> is your address for {{appName}}.</p>
                <p><a href="{{link}}" style="display:inline-block;padding:12px 20px;background:#1f6feb;color:#ffffff;text-decoration:none;border-radius:6px">Verify my address</a></p>
                <p>The link works once, within 24 hours. If you did not sign up or change your address, you can ignore this mail.</p>
                """)),
        .passwordReset: .init(
            subject: "Reset your {{appName}} password",
            text: """
                Hi {{name}},

                Someone, hopefully you, asked to reset the password of your {{appName}} account
                ({{email}}). To choose a new password, open this link within an hour:

                {{link}}

                If you did not ask for this, ignore this mail: your password stays as it is.
                """,
            html: page(
                """
                <p>Hi {{name}},</p>
                <p>Someone, hopefully you, asked to reset the password of your {{appName}} account (<strong>{{email}}</strong>).</p>
                <p><a href="{{link}}" style="display:inline-block;padding:12px 20px;background:#1f6feb;color:#ffffff;text-decoration:none;border-radius:6px">Choose a new password</a></p>
                <p>The link works once, within an hour. If you did not ask for this, ignore this mail: your password stays as it is.</p>
                """)),
        .passwordChanged: .init(
            subject: "Your {{appName}} password was changed",
            text: """
                Hi {{name}},

                The password of your {{appName}} account ({{email}}) was just changed, and every
                other device was signed out.

                If this was you, there is nothing to do. If it was not, reset your password from
                the app at once: someone else knows it.
                """,
            html: page(
                """
                <p>Hi {{name}},</p>
                <p>The password of your {{appName}} account (<strong>{{email}}</strong>) was just changed, and every other device was signed out.</p>
                <p>If this was you, there is nothing to do. If it was not, reset your password from the app at once: someone else knows it.</p>
                """)),
        .emailChanged: .init(
            subject: "The email address of your {{appName}} account was changed",
            text: """
                Hi {{name}},

                The email address of your {{appName}} account was changed from {{email}} to
                {{newEmail}}. Mail for the account now goes to the new address.

                If this was not you, someone else has your account: contact us at once.
                """,
            html: page(
                """
                <p>Hi {{name}},</p>
                <p>The email address of your {{appName}} account was changed from <strong>{{email}}</strong> to <strong>{{newEmail}}</strong>. Mail for the account now goes to the new address.</p>
                <p>If this was not you, someone else has your account: contact us at once.</p>
                """)),
        .confirmEmailChange: .init(
            subject: "Confirm your new email address for {{appName}}",
            text: """
                Hello,

                Someone asked to make {{email}} the address of a {{appName}} account. To confirm
                it, open this link within 24 hours:

                {{link}}

                Until then the account keeps its current address. If you did not ask for this,
                ignore this mail: nothing changes.
                """,
            html: page(
                """
                <p>Hello,</p>
                <p>Someone asked to make <strong>{{email}}</strong> the address of a {{appName}} account.</p>
                <p><a href="{{link}}" style="display:inline-block;padding:12px 20px;background:#1f6feb;color:#ffffff;text-decoration:none;border-radius:6px">Confirm my new address</a></p>
                <p>The link works once, within 24 hours. Until then the account keeps its current address. If you did not ask for this, ignore this mail: nothing changes.</p>
                """)),
        .emailChangeApplied: .init(
            subject: "The email address of your {{appName}} account was changed",
            text: """
                Hi {{name}},

                The email address of your {{appName}} account was changed from {{email}} to
                {{newEmail}}. Mail for the account now goes to the new address.

                If this was not you, open this link within 7 days: it puts {{email}} back and signs
                every device out.

                {{link}}
                """,
            html: page(
                """
                <p>Hi {{name}},</p>
                <p>The email address of your {{appName}} account was changed from <strong>{{email}}</strong> to <strong>{{newEmail}}</strong>. Mail for the account now goes to the new address.</p>
                <p>If this was not you, this link puts <strong>{{email}}</strong> back and signs every device out:</p>
                <p><a href="{{link}}" style="display:inline-block;padding:12px 20px;background:#cf222e;color:#ffffff;text-decoration:none;border-radius:6px">This was not me: undo the change</a></p>
                <p>The link works once, within 7 days.</p>
                """)),
        .dataExported: .init(
            subject: "Your {{appName}} data was exported",
            text: """
                Hi {{name}},

                A copy of everything your {{appName}} account ({{email}}) holds, its profile,
                sessions, activity and images, was just downloaded.

                If this was you, there is nothing to do. If it was not, someone else is signed in
                to your account: change your password at once, which signs every other device out.
                """,
            html: page(
                """
                <p>Hi {{name}},</p>
                <p>A copy of everything your {{appName}} account (<strong>{{email}}</strong>) holds, its profile, sessions, activity and images, was just downloaded.</p>
                <p>If this was you, there is nothing to do. If it was not, someone else is signed in to your account: change your password at once, which signs every other device out.</p>
                """)),
        .signInMethodAdded: .init(
            subject: "A new way to sign in to {{appName}}",
            text: """
                Hi {{name}},

                {{method}} was just added to your {{appName}} account ({{email}}): it can now be
                used to sign in.

                If this was you, there is nothing to do. If it was not, someone else has access to
                your account: open this link within 7 days. It removes this way to sign in and
                signs every device out; then change your password.

                {{link}}
                """,
            html: page(
                """
                <p>Hi {{name}},</p>
                <p><strong>{{method}}</strong> was just added to your {{appName}} account (<strong>{{email}}</strong>): it can now be used to sign in.</p>
                <p>If this was you, there is nothing to do. If it was not, someone else has access to your account: this link removes this way to sign in and signs every device out.</p>
                <p><a href="{{link}}" style="display:inline-block;padding:12px 20px;background:#cf222e;color:#ffffff;text-decoration:none;border-radius:6px">This was not me: remove it</a></p>
                <p>The link works once, within 7 days. Then change your password.</p>
                """)),
        .signInMethodRemoved: .init(
            subject: "A way to sign in to {{appName}} was removed",
            text: """
                Hi {{name}},

                {{method}} was just removed from your {{appName}} account ({{email}}): it no
                longer signs you in.

                If this was not you, someone else has access to your account: change your password
                at once, which signs every other device out.
                """,
            html: page(
                """
                <p>Hi {{name}},</p>
                <p><strong>{{method}}</strong> was just removed from your {{appName}} account (<strong>{{email}}</strong>): it no longer signs you in.</p>
                <p>If this was not you, someone else has access to your account: change your password at once, which signs every other device out.</p>
                """)),
        .secondFactorChanged: .init(
            subject: "Two-step verification of your {{appName}} account changed",
            text: """
                Hi {{name}},

                {{change}} ({{appName}} account {{email}}).

                If this was you, there is nothing to do. If it was not, someone else has access to
                your account: change your password at once, which signs every other device out.
                """,
            html: page(
                """
                <p>Hi {{name}},</p>
                <p>{{change}} ({{appName}} account <strong>{{email}}</strong>).</p>
                <p>If this was you, there is nothing to do. If it was not, someone else has access to your account: change your password at once, which signs every other device out.</p>
                """)),
        .signInCode: .init(
            subject: "Your {{appName}} code",
            text: """
                Hi {{name}},

                Your code for {{appName}} ({{email}}) is:

                {{code}}

                It works once, within 10 minutes. Never share it: nobody from {{appName}} will ask
                for it. If you did not ask for a code, you can ignore this mail.
                """,
            html: page(
                """
                <p>Hi {{name}},</p>
                <p>Your code for {{appName}} (<strong>{{email}}</strong>) is:</p>
                <p style="font-size:28px;font-weight:600;letter-spacing:4px;font-family:ui-monospace,Menlo,Consolas,monospace">{{code}}</p>
                <p>It works once, within 10 minutes. Never share it: nobody from {{appName}} will ask for it. If you did not ask for a code, you can ignore this mail.</p>
                """)),
    ]

    /// A whole HTML document around a body: inline styles only, since mail clients drop style sheets.
    private static func page(_ body: String) -> String {
        """
        <!DOCTYPE html>
        <html lang="en">
        <head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>{{appName}}</title></head>
        <body style="margin:0;padding:24px;font-family:-apple-system,Segoe UI,Roboto,Helvetica,Arial,sans-serif;font-size:16px;line-height:1.5;color:#1f2328">
        <div style="max-width:560px;margin:0 auto">
        \(body)
        <p style="color:#656d76;font-size:13px">{{appName}}</p>
        </div>
        </body>
        </html>
        """
    }
}
