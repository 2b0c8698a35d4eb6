/// The OpenAPI 3.1 document of the HTTP API: the contract of API.md plus the decisions it leaves to
/// the implementation, written into `description` fields. Served at `GET /openapi.json` and printed
/// by `exosphere openapi`. `OpenAPIDocumentTests` checks that its paths are exactly the route table's.
enum OpenAPIDocument {
    static let json = #"""
    {
      "openapi": "3.1.0",
      "info": {
        "title": "Exosphere",
        "version": "0.1.0",
        "summary": "A self-hosted backend for the user accounts, profiles and images of a mobile app.",
        "description": "Accounts, sessions, profiles with typed custom fields, and images, over JSON. This document is the\ncontract of `API.md` plus every decision that page leaves open; where they differ, the contract wins\nand the difference is a bug.\n\n## Conventions\n\n- HTTP/1.1 (HTTP/1.0 is also accepted). JSON bodies are UTF-8; every JSON response has\n  `Content-Type: application/json`. Request bodies are read as JSON only when their media type is\n  one the operation lists; the media type is compared case-insensitively and parameters such as\n  `charset` are ignored. Any other (or a missing) `Content-Type` is `415 unsupported_media_type`.\n- Every `GET` operation also answers `HEAD` (same status and headers, no body).\n- Authentication: `Authorization: Bearer <accessToken>`, the only place a token is read (never a\n  URL, a cookie or a body). See the `bearer` security scheme.\n- Timestamps are RFC 3339 UTC with milliseconds (`2026-11-29T17:39:01.123Z`). Ids are opaque\n  strings (today lowercase UUIDs); clients must not parse them.\n- Response objects may gain members in later versions; clients ignore members they do not know.\n  Request bodies, on the contrary, refuse unknown top-level keys (`422 unknown_field`), so a typo\n  such as `firstName` never silently does nothing.\n- Read-only keys of the user (`id`, `createdAt`, `updatedAt`, `emailVerified`) are ignored when a\n  client echoes them back in `PUT`/`PATCH /users/me`. In bodies that are not a user representation\n  (registration, sign-in, …) they are unknown keys like any other.\n- **Request ids.** A request's `X-Request-Id` is echoed on its response when it is 1–128 characters\n  of `[A-Za-z0-9-_.:]`; otherwise (absent, too long, other characters) the server generates an\n  opaque one. Every response carries `X-Request-Id`, and every log line of the request names it.\n\n## Errors\n\nEvery error is an RFC 9457 problem document, `Content-Type: application/problem+json`, with\n`type` (`about:blank`), `title` (the status's reason phrase), `status`, a stable machine-readable\n`code`, a `detail` for people, and for validation failures `errors`, one entry per offending\nfield (`field` is a JSON path such as `data.height`), at most 20 of them: beyond that `errorCount`\ngives the total. Field names and details are echoed up to 256 characters. When several fields are\nwrong the top-level `code` is the first entry's code. No stack trace, SQL, hash, token or password ever appears in a\nresponse or a log line. Clients switch on `status` and `code`, never on `detail`.\n\n| status | codes |\n|---|---|\n| 400 | `invalid_json` (malformed JSON, duplicate keys, number literals over 100 characters), and malformed HTTP: `invalid_request_line`, `invalid_method`, `invalid_target`, `invalid_version`, `bare_lf`, `bare_cr`, `obs_fold`, `whitespace_before_colon`, `invalid_field_name`, `invalid_field_value`, `missing_host`, `duplicate_host`, `invalid_host`, `duplicate_content_length`, `invalid_content_length`, `content_length_with_transfer_encoding`, `chunked_not_final`, `transfer_encoding_http10`, `invalid_chunk_size`, `chunk_size_overflow`, `invalid_chunk_extension`, `chunk_extension_too_long`, `invalid_chunk_terminator`, `invalid_trailer`; and a broken multipart body of an image upload: `malformed`, `part_head_too_large`, `too_many_parts` |\n| 401 | `missing_token` (no `Authorization` header), `invalid_token` (malformed, unknown, expired or revoked token), `invalid_credentials` (sign-in only); always with `WWW-Authenticate`. An operation that needs a session checks it from the request head before it reads a body over 64 KiB (or a chunked one), and answers `401` with the body unread, closing the connection |\n| 403 | `invalid_password` (the current password is wrong) |\n| 404 | `not_found` (unknown path, or a resource that does not exist or belongs to another user), `image_not_found` (an image id that is unknown, not well-formed or another user's) |\n| 405 | `method_not_allowed`, with `Allow` (a path that has `GET` also allows `HEAD`) |\n| 408 | `header_timeout` (the head did not arrive within 10 s), `body_timeout` (the body took longer than 10 s plus one second per KiB received, no byte of it came for 10 s, or the whole request took over 60 s from its first byte, 15 minutes for an image upload) |\n| 409 | `email_taken` |\n| 412 | `precondition_failed` (stale `If-Match`) |\n| 413 | `body_too_large` (a request body over the server's limit, 1 MiB by default, `--max-body-bytes`; JSON bodies are limited to 1 MiB in any case; an image upload's body may be `--image-max-bytes` + 64 KiB), `image_too_large` (an image over `--image-max-bytes`, 10 MiB by default) |\n| 414 | `request_line_too_long` (over 8 KiB) |\n| 415 | `unsupported_media_type` |\n| 416 | `range_not_satisfiable` (an image download's `Range` is malformed or selects no byte), with `Content-Range: bytes */<size>` |\n| 417 | `unsupported_expectation` (only `Expect: 100-continue` is supported) |\n| 422 | `unknown_field`, `invalid_type`, `invalid_value`, `field_limit_reached`, `invalid_email`, `weak_password`, `password_not_allowed`, `password_unchanged`, `password_mismatch`, `too_deep` (JSON nested more than 32 levels); image uploads: `content_mismatch`, `empty_image`, `truncated`, `malformed`, `invalid_dimensions`, `too_many_pixels`, `no_file_part`, `multiple_file_parts`; the image list: `invalid_limit`, `invalid_cursor` |\n| 429 | `too_many_attempts`, with `Retry-After` |\n| 431 | `header_field_too_large` (a field line over 8 KiB), `headers_too_large` (head over 32 KiB), `too_many_headers` (over 100) |\n| 500 | `internal_error` (logged in full on the server, never detailed to the client) |\n| 501 | `method_not_implemented` (a method the server does not know), `unsupported_transfer_coding` |\n| 503 | `overloaded` (too many open connections, requests or password hashes at once), `database_busy` (no database connection free within the acquire timeout), `database_unavailable`, `not_ready` (`/readyz` only); always with `Retry-After` |\n| 505 | `unsupported_version` |\n\nAn answer to malformed or oversized HTTP (the HTTP-level codes above, including `body_too_large` for a\nbody over the server's limit) closes the connection: the server cannot know where a next request would\nstart. The multipart codes of `400` and `image_too_large` are answered after the whole body was read and\nkeep the connection open.\nA `422` for an invalid body leaves nothing changed.\n\n## Images\n\nA user's images are kept in PostgreSQL or as files referenced from it: the deployment chooses\n(`--image-storage database|filesystem`), and ids, metadata, URLs, ETags and every answer are the same\nfor both; `exosphere images migrate` moves images between the storages without changing any of it.\n\n- Formats: JPEG, PNG, GIF, WebP and HEIC, sent as exactly `image/jpeg`, `image/png`, `image/gif`,\n  `image/webp`, `image/heic` (raw body or a multipart file part). The bytes must be the declared\n  format, judged by their signature and headers; nothing is decoded, converted or stripped, and a\n  download returns the bytes exactly as uploaded (EXIF metadata included).\n- Limits: at most `--image-max-bytes` (10 MiB by default) per image, 65,535 pixels per side and\n  100,000,000 pixels in all. `width` and `height` are as encoded, before EXIF `Orientation` or HEIF\n  `irot` is applied.\n- Privacy: an image is visible to its owner only; an unknown, malformed or another user's id is\n  `404 image_not_found`. The server names everything it stores after its own ids; a client's file\n  name is never stored or used. `DELETE /users/me` deletes the user's images with the account.\n- The list is oldest first by (`createdAt`, `id`), in pages of `limit` (1–100, default 50) with an\n  opaque cursor (`next`, sent back as `after`).\n\n## Sessions\n\nA session starts at registration, sign-in and password change, and its bearer token (at least 256\nbits from a CSPRNG, today 43 base64url characters; opaque) is shown once; the database stores only\nits SHA-256. A session ends at the earlier of its absolute end (`createdAt` + 1 year by default,\n`--session-lifetime`) and its idle end (`lastSeenAt` + 30 days by default,\n`--session-idle-timeout`); `expiresAt` in responses is that earlier instant as of the response.\nEvery authenticated request refreshes `lastSeenAt`, which is written at most once a minute, so it\n(and the idle end) may lag by up to 60 seconds. An ended or revoked session's token is\n`401 invalid_token`. A user keeps at most 100 sessions (`--max-sessions-per-user`): a sign-in beyond\nthat ends the oldest. Ended sessions are deleted in the background.\n\n## Throttles\n\nCounters live in PostgreSQL, shared by every instance. A window opens at the first attempt and\nlasts 15 minutes (registration: an hour); reaching the limit within it locks the key until the window\nends, and while it is locked every attempt, right or wrong, is `429 too_many_attempts` with\n`Retry-After` (whole seconds until the window ends, at least 1). An attempt is counted *before* its\npassword is hashed, for all of its keys at once, and a success gives it back: guesses sent together\nare verified at most up to the limit, on any number of instances.\n\nThe client address is the TCP peer's IP address or, when the peer is one of `--trusted-proxies`,\nthe right-most `X-Forwarded-For` address that is not a trusted proxy (the peer's own when that entry\nis not an IP address). Throttles count an IPv6 address by its /64.\n\n- Sign-in: 10 failures per email address from one client address (`--signin-limit`; the email is\n  trimmed and ASCII-lowercased, counted whether or not an account has it, so the lock reveals\n  nothing), 100 per email address from all client addresses together (`--signin-email-limit`: stops\n  guessing spread over many addresses, while one address alone can never lock the owner out\n  elsewhere), and 100 per client address whatever the email (`--signin-address-limit`). A successful\n  sign-in clears its (email, address) counter. Throttling never touches sessions: a locked-out owner\n  keeps the sessions already signed in.\n- Current-password checks: 5 wrong passwords per user, shared by `POST /users/me/password` and\n  `DELETE /users/me`.\n- Registration: 100 per client address an hour (`--registration-address-limit`, `0` turns it off).\n\nA sign-in whose client closes its connection before its password is hashed is dropped unhashed\nand counts for nothing.\n\n## Custom fields\n\nA user has at most 64 custom fields; a body naming more is `422` before any of its names is\nlooked up or claimed. The deployment has at most `--field-name-limit` (1,000) names; a write that\nwould add one more is `422 field_limit_reached`. With `--lock-schema on`, only the fields pinned by\n`--field-config` may be written; any other is `422 unknown_field`.\n\n## Conditional requests\n\n`GET`, `PUT` and `PATCH /users/me` answer with an `ETag`: an opaque, strong entity tag (a quoted\nstring; do not parse it) that changes with every write to the account, including a password\nchange, and differs between users. `If-None-Match` on `GET` answers `304` when it names the current\ntag (or is `*`); `If-Match` on `PUT`/`PATCH` makes the write conditional: when it names no current\ntag the answer is `412 precondition_failed` and nothing changes. Both take a comma-separated list.\nWithout `If-Match` the last write wins.\n\nAn image download's `ETag` is not opaque: it is the quoted lowercase hex SHA-256 of the bytes (the\nimage's `sha256`), and since the bytes behind an id never change it is cached as\n`private, max-age=31536000, immutable`. `If-None-Match` answers `304`; `Range` (one byte range, `206`)\nand `If-Range` (strong comparison) are described on the operation.\n"
      },
      "servers": [{"url": "http://127.0.0.1:8080", "description": "`exosphere serve` with its default address"}],
      "tags": [
        {"name": "accounts", "description": "Registration, sign-in and sign-out."},
        {"name": "sessions", "description": "The signed-in user's sessions."},
        {"name": "profile", "description": "The signed-in user's profile, password, account and the field schema."},
        {"name": "images", "description": "The signed-in user's images: upload, list, download, delete."},
        {"name": "operations", "description": "Health, readiness and this document."}
      ],
      "paths": {
        "/healthz": {
          "parameters": [{"$ref": "#/components/parameters/X-Request-Id"}],
          "get": {
            "tags": ["operations"],
            "operationId": "health",
            "summary": "Liveness: the process serves HTTP",
            "description": "Answered on the event loop without touching the database; use `/readyz` for readiness.",
            "responses": {
              "200": {
                "description": "The process is up.",
                "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}},
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Health"}}}
              },
              "503": {"$ref": "#/components/responses/Overloaded"},
              "default": {"$ref": "#/components/responses/HTTPError"}
            }
          }
        },
        "/metrics": {
          "parameters": [{"$ref": "#/components/parameters/X-Request-Id"}],
          "get": {
            "tags": ["operations"],
            "operationId": "metrics",
            "summary": "Prometheus metrics",
            "description": "The Prometheus text exposition format 0.0.4: requests by route pattern, method and status; a latency histogram per route; requests in flight; open and accepted connections; the HTTP worker pool, the database pool and the hashing pool; build and process figures. Route labels are patterns (`/users/me/sessions/{id}`), and requests no route matched are labelled `-` with their method (`other` for methods the server does not know), so the number of series is bounded. Serve it only to your monitoring network: it needs no authentication. With `--metrics-listen HOST:PORT` it is served on that listener only, and this listener answers `404`.",
            "responses": {
              "200": {
                "description": "The metrics.",
                "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}},
                "content": {"text/plain; version=0.0.4; charset=utf-8": {"schema": {"type": "string"}}}
              },
              "503": {"$ref": "#/components/responses/Overloaded"},
              "default": {"$ref": "#/components/responses/HTTPError"}
            }
          }
        },
        "/readyz": {
          "parameters": [{"$ref": "#/components/parameters/X-Request-Id"}],
          "get": {
            "tags": ["operations"],
            "operationId": "ready",
            "summary": "Readiness: the database answers and every migration is applied",
            "responses": {
              "200": {
                "description": "Ready to serve.",
                "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}},
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Ready"}}}
              },
              "503": {
                "description": "Not ready. `not_ready` (`Retry-After: 5`): the database is unreachable or has pending migrations; `overloaded` (`Retry-After: 1`): too many requests or connections at once.",
                "headers": {
                  "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"},
                  "Retry-After": {"$ref": "#/components/headers/Retry-After"}
                },
                "content": {
                  "application/problem+json": {
                    "schema": {
                      "allOf": [{"$ref": "#/components/schemas/Problem"}],
                      "properties": {"code": {"enum": ["not_ready", "overloaded"]}}
                    }
                  }
                }
              },
              "default": {"$ref": "#/components/responses/HTTPError"}
            }
          }
        },
        "/openapi.json": {
          "parameters": [{"$ref": "#/components/parameters/X-Request-Id"}],
          "get": {
            "tags": ["operations"],
            "operationId": "openAPIDocument",
            "summary": "This OpenAPI 3.1 document",
            "description": "A constant, also printed by `exosphere openapi`.",
            "responses": {
              "200": {
                "description": "The OpenAPI document.",
                "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}},
                "content": {"application/json": {"schema": {"type": "object"}}}
              },
              "503": {"$ref": "#/components/responses/Overloaded"},
              "default": {"$ref": "#/components/responses/HTTPError"}
            }
          }
        },
        "/users": {
          "parameters": [{"$ref": "#/components/parameters/X-Request-Id"}],
          "post": {
            "tags": ["accounts"],
            "operationId": "register",
            "summary": "Register a user and sign them in",
            "description": "Creates the user (with `emailVerified: false`) and a session for it, in one transaction. The body, a taken email (`409`) and the client address's registration limit (`429`, see *Throttles*) are checked before any hashing; the password is stored as an scrypt PHC string. Registrations hash in a share of the hashing pool that sign-ins of existing users never lose to them: in a flood of registrations some get `503 overloaded`, sign-ins go on. `User-Agent` (at most 256 characters kept) is recorded on the session.",
            "requestBody": {
              "required": true,
              "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RegisterRequest"}}}
            },
            "responses": {
              "201": {
                "description": "Registered and signed in.",
                "headers": {
                  "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"},
                  "Location": {"$ref": "#/components/headers/Location"},
                  "Cache-Control": {"$ref": "#/components/headers/Cache-Control-No-Store"}
                },
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SessionBody"}}}
              },
              "400": {"$ref": "#/components/responses/BadRequest"},
              "409": {"$ref": "#/components/responses/EmailTaken"},
              "413": {"$ref": "#/components/responses/ContentTooLarge"},
              "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
              "429": {"$ref": "#/components/responses/TooManyAttempts"},
              "422": {
                "description": "Well-formed but invalid; nothing changed. `invalid_value`: a required key missing or `null`, a name over 100 characters, a bad custom field name, too many custom fields, a string over 4096 bytes, a user over 64 KiB. `too_deep`: the JSON nests more than 32 levels; `invalid_type` also when the body is not a JSON object. `field_limit_reached`: a new custom field name when the deployment has `--field-name-limit` names already; `unknown_field` also for a custom field outside a locked schema (`--lock-schema`).",
                "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}},
                "content": {
                  "application/problem+json": {
                    "schema": {
                      "allOf": [{"$ref": "#/components/schemas/Problem"}],
                      "properties": {
                        "code": {
                          "enum": [
                            "unknown_field",
                            "invalid_type",
                            "invalid_value",
                            "field_limit_reached",
                            "invalid_email",
                            "weak_password",
                            "too_deep"
                          ]
                        }
                      }
                    }
                  }
                }
              },
              "503": {"$ref": "#/components/responses/ServiceUnavailable"},
              "default": {"$ref": "#/components/responses/HTTPError"}
            }
          }
        },
        "/users/signin": {
          "parameters": [{"$ref": "#/components/parameters/X-Request-Id"}],
          "post": {
            "tags": ["accounts"],
            "operationId": "signIn",
            "summary": "Sign in with email and password",
            "description": "Starts a new session; other sessions of the user are untouched. An email address that is not syntactically valid or has no account gets the same `401` (same status, body and timing) as a wrong password, after the same hashing work. A stored hash with parameters weaker than the current ones is upgraded on success. See *Throttles* for the `429` rules.",
            "requestBody": {
              "required": true,
              "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SignInRequest"}}}
            },
            "responses": {
              "200": {
                "description": "Signed in.",
                "headers": {
                  "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"},
                  "Cache-Control": {"$ref": "#/components/headers/Cache-Control-No-Store"}
                },
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SessionBody"}}}
              },
              "400": {"$ref": "#/components/responses/BadRequest"},
              "401": {
                "description": "Wrong email or password.",
                "headers": {
                  "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"},
                  "WWW-Authenticate": {"$ref": "#/components/headers/WWW-Authenticate"}
                },
                "content": {
                  "application/problem+json": {
                    "schema": {
                      "allOf": [{"$ref": "#/components/schemas/Problem"}],
                      "properties": {"code": {"enum": ["invalid_credentials"]}}
                    }
                  }
                }
              },
              "413": {"$ref": "#/components/responses/ContentTooLarge"},
              "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
              "422": {
                "description": "Well-formed but invalid; nothing changed. `invalid_value`: `email` or `password` missing or `null`. `too_deep`: the JSON nests more than 32 levels; `invalid_type` also when the body is not a JSON object.",
                "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}},
                "content": {
                  "application/problem+json": {
                    "schema": {
                      "allOf": [{"$ref": "#/components/schemas/Problem"}],
                      "properties": {"code": {"enum": ["unknown_field", "invalid_type", "invalid_value", "too_deep"]}}
                    }
                  }
                }
              },
              "429": {"$ref": "#/components/responses/TooManyAttempts"},
              "503": {"$ref": "#/components/responses/ServiceUnavailable"},
              "default": {"$ref": "#/components/responses/HTTPError"}
            }
          }
        },
        "/users/signout": {
          "parameters": [{"$ref": "#/components/parameters/X-Request-Id"}],
          "post": {
            "tags": ["accounts"],
            "operationId": "signOut",
            "summary": "End the calling session, the others, or all",
            "description": "The body is optional: an empty body (with any or no `Content-Type`) means `{\"scope\": \"current\"}`. A non-empty body must be `application/json`.",
            "security": [{"bearer": []}],
            "requestBody": {
              "required": false,
              "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SignOutRequest"}}}
            },
            "responses": {
              "204": {
                "description": "Signed out of the sessions the scope names.",
                "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}}
              },
              "400": {"$ref": "#/components/responses/BadRequest"},
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "413": {"$ref": "#/components/responses/ContentTooLarge"},
              "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
              "422": {
                "description": "Well-formed but invalid; nothing changed. `invalid_value`: `scope` is not one of `current`, `others`, `all`. `too_deep`: the JSON nests more than 32 levels; `invalid_type` also when the body is not a JSON object.",
                "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}},
                "content": {
                  "application/problem+json": {
                    "schema": {
                      "allOf": [{"$ref": "#/components/schemas/Problem"}],
                      "properties": {"code": {"enum": ["unknown_field", "invalid_type", "invalid_value", "too_deep"]}}
                    }
                  }
                }
              },
              "503": {"$ref": "#/components/responses/ServiceUnavailable"},
              "default": {"$ref": "#/components/responses/HTTPError"}
            }
          }
        },
        "/users/me": {
          "parameters": [{"$ref": "#/components/parameters/X-Request-Id"}],
          "get": {
            "tags": ["profile"],
            "operationId": "getMe",
            "summary": "The signed-in user",
            "security": [{"bearer": []}],
            "parameters": [{"$ref": "#/components/parameters/If-None-Match"}],
            "responses": {
              "200": {
                "description": "The user.",
                "headers": {
                  "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"},
                  "ETag": {"$ref": "#/components/headers/ETag"},
                  "Cache-Control": {"$ref": "#/components/headers/Cache-Control-Private"}
                },
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/User"}}}
              },
              "304": {
                "description": "`If-None-Match` names the current ETag; no body.",
                "headers": {
                  "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"},
                  "ETag": {"$ref": "#/components/headers/ETag"},
                  "Cache-Control": {"$ref": "#/components/headers/Cache-Control-Private"}
                }
              },
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "503": {"$ref": "#/components/responses/ServiceUnavailable"},
              "default": {"$ref": "#/components/responses/HTTPError"}
            }
          },
          "put": {
            "tags": ["profile"],
            "operationId": "replaceMe",
            "summary": "Replace the editable representation of the user",
            "description": "`email` is required; an omitted or `null` `firstname`/`lastname` becomes `\"\"`; `data` replaces all custom fields (omitted or `null`: none; `null` members are dropped). The read-only keys `id`, `createdAt`, `updatedAt` and `emailVerified` are ignored, so a client may send back the user it read; a `password` key is `422 password_not_allowed` (use `POST /users/me/password`). Changing `email` (other than in letter case) resets `emailVerified` to `false`. Every write bumps `updatedAt` and the ETag.",
            "security": [{"bearer": []}],
            "parameters": [{"$ref": "#/components/parameters/If-Match"}],
            "requestBody": {
              "required": true,
              "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ProfileReplacement"}}}
            },
            "responses": {
              "200": {
                "description": "The updated user.",
                "headers": {
                  "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"},
                  "ETag": {"$ref": "#/components/headers/ETag"},
                  "Cache-Control": {"$ref": "#/components/headers/Cache-Control-Private"}
                },
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/User"}}}
              },
              "400": {"$ref": "#/components/responses/BadRequest"},
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "409": {"$ref": "#/components/responses/EmailTaken"},
              "412": {"$ref": "#/components/responses/PreconditionFailed"},
              "413": {"$ref": "#/components/responses/ContentTooLarge"},
              "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
              "422": {
                "description": "Well-formed but invalid; nothing changed. `invalid_value`: `email` missing or `null`, a name over 100 characters, a bad custom field name, too many custom fields, a string over 4096 bytes, a user over 64 KiB. `too_deep`: the JSON nests more than 32 levels; `invalid_type` also when the body is not a JSON object.",
                "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}},
                "content": {
                  "application/problem+json": {
                    "schema": {
                      "allOf": [{"$ref": "#/components/schemas/Problem"}],
                      "properties": {
                        "code": {
                          "enum": [
                            "unknown_field",
                            "password_not_allowed",
                            "invalid_type",
                            "invalid_value",
                            "field_limit_reached",
                            "invalid_email",
                            "too_deep"
                          ]
                        }
                      }
                    }
                  }
                }
              },
              "503": {"$ref": "#/components/responses/ServiceUnavailable"},
              "default": {"$ref": "#/components/responses/HTTPError"}
            }
          },
          "patch": {
            "tags": ["profile"],
            "operationId": "patchMe",
            "summary": "Change what the patch names (JSON Merge Patch, RFC 7396)",
            "description": "Accepts `application/merge-patch+json` and `application/json`. Keys left out are unchanged. `firstname`/`lastname`: `null` means `\"\"`. `email` cannot be removed (`null` is `422 invalid_type`). `data`: an object merges member by member (a `null` member removes that custom field); `data: null` removes every custom field. The limits (64 fields, 64 KiB) apply to the result. Read-only keys are ignored and `password` is `422 password_not_allowed`, as for `PUT`. Changing `email` (other than in letter case) resets `emailVerified` to `false`. Every write, even an empty patch, bumps `updatedAt` and the ETag.",
            "security": [{"bearer": []}],
            "parameters": [{"$ref": "#/components/parameters/If-Match"}],
            "requestBody": {
              "required": true,
              "content": {
                "application/merge-patch+json": {"schema": {"$ref": "#/components/schemas/ProfilePatch"}},
                "application/json": {"schema": {"$ref": "#/components/schemas/ProfilePatch"}}
              }
            },
            "responses": {
              "200": {
                "description": "The updated user.",
                "headers": {
                  "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"},
                  "ETag": {"$ref": "#/components/headers/ETag"},
                  "Cache-Control": {"$ref": "#/components/headers/Cache-Control-Private"}
                },
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/User"}}}
              },
              "400": {"$ref": "#/components/responses/BadRequest"},
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "409": {"$ref": "#/components/responses/EmailTaken"},
              "412": {"$ref": "#/components/responses/PreconditionFailed"},
              "413": {"$ref": "#/components/responses/ContentTooLarge"},
              "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
              "422": {
                "description": "Well-formed but invalid; nothing changed. `invalid_value`: a name over 100 characters, a bad custom field name, too many custom fields, a string over 4096 bytes, a user over 64 KiB. `too_deep`: the JSON nests more than 32 levels; `invalid_type` also when the body is not a JSON object.",
                "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}},
                "content": {
                  "application/problem+json": {
                    "schema": {
                      "allOf": [{"$ref": "#/components/schemas/Problem"}],
                      "properties": {
                        "code": {
                          "enum": [
                            "unknown_field",
                            "password_not_allowed",
                            "invalid_type",
                            "invalid_value",
                            "field_limit_reached",
                            "invalid_email",
                            "too_deep"
                          ]
                        }
                      }
                    }
                  }
                }
              },
              "503": {"$ref": "#/components/responses/ServiceUnavailable"},
              "default": {"$ref": "#/components/responses/HTTPError"}
            }
          },
          "delete": {
            "tags": ["profile"],
            "operationId": "deleteMe",
            "summary": "Delete the account",
            "description": "Needs the current password in the body (`application/json`). Deletes the user and, with it, every session, every image and the custom field values, in one transaction (image files are removed right after it commits); the custom field types stay. Wrong passwords count towards the per-user password throttle shared with `POST /users/me/password` (see *Throttles*).",
            "security": [{"bearer": []}],
            "requestBody": {
              "required": true,
              "content": {"application/json": {"schema": {"$ref": "#/components/schemas/DeleteAccountRequest"}}}
            },
            "responses": {
              "204": {
                "description": "The account, its sessions and its images are gone.",
                "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}}
              },
              "400": {"$ref": "#/components/responses/BadRequest"},
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "403": {"$ref": "#/components/responses/InvalidPassword"},
              "413": {"$ref": "#/components/responses/ContentTooLarge"},
              "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
              "422": {
                "description": "Well-formed but invalid; nothing changed. `invalid_value`: `password` missing or `null`. `too_deep`: the JSON nests more than 32 levels; `invalid_type` also when the body is not a JSON object.",
                "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}},
                "content": {
                  "application/problem+json": {
                    "schema": {
                      "allOf": [{"$ref": "#/components/schemas/Problem"}],
                      "properties": {"code": {"enum": ["unknown_field", "invalid_type", "invalid_value", "too_deep"]}}
                    }
                  }
                }
              },
              "429": {"$ref": "#/components/responses/TooManyAttempts"},
              "503": {"$ref": "#/components/responses/ServiceUnavailable"},
              "default": {"$ref": "#/components/responses/HTTPError"}
            }
          }
        },
        "/users/me/password": {
          "parameters": [{"$ref": "#/components/parameters/X-Request-Id"}],
          "post": {
            "tags": ["profile"],
            "operationId": "changePassword",
            "summary": "Change the password",
            "description": "The old password must verify; the new one must differ from it and meet the policy (at least 8 characters, at most 1024 bytes, checked before any hashing); `confirmPassword`, when sent, must equal `newPassword`. In one transaction the hash is replaced, every other session of the user is revoked and the calling session is replaced by a new one, returned here with `revokedSessions`, the number of other sessions revoked (the replaced calling session is not counted). The old token is `401` afterwards. Five wrong old passwords within 15 minutes lock this endpoint and `DELETE /users/me` for the user until 15 minutes after the first of them: every attempt, right or wrong, is `429` with `Retry-After`; a correct password does not reset the count.",
            "security": [{"bearer": []}],
            "requestBody": {
              "required": true,
              "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PasswordChangeRequest"}}}
            },
            "responses": {
              "200": {
                "description": "Changed; the new session.",
                "headers": {
                  "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"},
                  "Cache-Control": {"$ref": "#/components/headers/Cache-Control-No-Store"}
                },
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PasswordChanged"}}}
              },
              "400": {"$ref": "#/components/responses/BadRequest"},
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "403": {"$ref": "#/components/responses/InvalidPassword"},
              "413": {"$ref": "#/components/responses/ContentTooLarge"},
              "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
              "422": {
                "description": "Well-formed but invalid; nothing changed. `invalid_value`: `oldPassword` or `newPassword` missing or `null`; `password_mismatch`: `confirmPassword` differs from `newPassword`; `weak_password`: the new password breaks the policy; `password_unchanged`: the new password equals the old one. `too_deep`: the JSON nests more than 32 levels; `invalid_type` also when the body is not a JSON object.",
                "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}},
                "content": {
                  "application/problem+json": {
                    "schema": {
                      "allOf": [{"$ref": "#/components/schemas/Problem"}],
                      "properties": {
                        "code": {
                          "enum": [
                            "unknown_field",
                            "invalid_type",
                            "invalid_value",
                            "password_mismatch",
                            "weak_password",
                            "password_unchanged",
                            "too_deep"
                          ]
                        }
                      }
                    }
                  }
                }
              },
              "429": {"$ref": "#/components/responses/TooManyAttempts"},
              "503": {"$ref": "#/components/responses/ServiceUnavailable"},
              "default": {"$ref": "#/components/responses/HTTPError"}
            }
          }
        },
        "/users/me/sessions": {
          "parameters": [{"$ref": "#/components/parameters/X-Request-Id"}],
          "get": {
            "tags": ["sessions"],
            "operationId": "listSessions",
            "summary": "The user's live sessions",
            "description": "Oldest first; ended sessions are not listed. `current` marks the calling session.",
            "security": [{"bearer": []}],
            "responses": {
              "200": {
                "description": "The sessions.",
                "headers": {
                  "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"},
                  "Cache-Control": {"$ref": "#/components/headers/Cache-Control-No-Store"}
                },
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SessionList"}}}
              },
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "503": {"$ref": "#/components/responses/ServiceUnavailable"},
              "default": {"$ref": "#/components/responses/HTTPError"}
            }
          }
        },
        "/users/me/sessions/{id}": {
          "parameters": [{"$ref": "#/components/parameters/X-Request-Id"}],
          "delete": {
            "tags": ["sessions"],
            "operationId": "revokeSession",
            "summary": "Revoke one of the user's sessions",
            "description": "Revoking the calling session's own id signs this client out, like `POST /users/signout`. A request body is ignored.",
            "security": [{"bearer": []}],
            "parameters": [{"$ref": "#/components/parameters/SessionID"}],
            "responses": {
              "204": {"description": "Revoked.", "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}}},
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "404": {
                "description": "No session of this user has this id (also for another user's session and for an id that is not well-formed).",
                "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}},
                "content": {
                  "application/problem+json": {
                    "schema": {
                      "allOf": [{"$ref": "#/components/schemas/Problem"}],
                      "properties": {"code": {"enum": ["not_found"]}}
                    }
                  }
                }
              },
              "503": {"$ref": "#/components/responses/ServiceUnavailable"},
              "default": {"$ref": "#/components/responses/HTTPError"}
            }
          }
        },
        "/users/me/images": {
          "parameters": [{"$ref": "#/components/parameters/X-Request-Id"}],
          "get": {
            "tags": ["images"],
            "operationId": "listImages",
            "summary": "The user's images, a page at a time",
            "description": "Oldest first, ordered by (`createdAt`, `id`): the upload time to the microsecond (`createdAt` shows milliseconds), ties broken by `id`. A page holds at most `limit` images. `next` is the cursor of the following page, or `null` on the last page (also when the last page is exactly full); send it back unchanged as `after`. The cursor is opaque: do not parse or build one. It names a position rather than a page number, so deleting images, even the one the cursor came from, neither repeats nor skips any of the others. A parameter given twice keeps its first value; other query parameters are ignored.",
            "security": [{"bearer": []}],
            "parameters": [{"$ref": "#/components/parameters/ImageLimit"}, {"$ref": "#/components/parameters/ImageCursor"}],
            "responses": {
              "200": {
                "description": "One page of images.",
                "headers": {
                  "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"},
                  "Cache-Control": {"$ref": "#/components/headers/Cache-Control-Private"}
                },
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ImagePage"}}}
              },
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "422": {
                "description": "`invalid_limit`: `limit` is not an integer from 1 to 100 (an empty value included); `invalid_cursor`: `after` is not a cursor (an empty value included).",
                "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}},
                "content": {
                  "application/problem+json": {
                    "schema": {
                      "allOf": [{"$ref": "#/components/schemas/Problem"}],
                      "properties": {"code": {"enum": ["invalid_limit", "invalid_cursor"]}}
                    }
                  }
                }
              },
              "503": {"$ref": "#/components/responses/ServiceUnavailable"},
              "default": {"$ref": "#/components/responses/HTTPError"}
            }
          },
          "post": {
            "tags": ["images"],
            "operationId": "uploadImage",
            "summary": "Upload an image",
            "description": "Send the image either as the raw body, with its type as `Content-Type`, or as `multipart/form-data` (a browser form, `curl -F file=@photo.jpg`).\n\n**Raw body.** `Content-Type` must be one of `image/jpeg`, `image/png`, `image/gif`, `image/webp`, `image/heic`: compared case-insensitively, parameters ignored, no aliases (`image/jpg` is `415`). `Content-Length` or chunked.\n\n**Multipart.** The file is the one part whose `Content-Disposition` has a `filename` (or `filename*`) parameter, whatever its field name; parts without one are form fields and are ignored (a part with `filename=\"\"` and no content, what a browser sends for an empty file input, is ignored too). No file part is `422 no_file_part`, more than one `422 multiple_file_parts`: the server never guesses. The part's `Content-Type` names the format, by the rules of the raw body; when the part has none, or `application/octet-stream`, the format is sniffed from the bytes' signature (bytes that are no supported image are `422 content_mismatch`); another type is `415`. A `multipart/form-data` type without a valid `boundary` parameter (1–70 RFC 2046 characters) is `415`. At most 16 parts and 8 KiB of headers per part; the framing is checked strictly (`400`). The file name is neither stored nor used: the server names everything it stores.\n\n**Checks.** The bytes must be the declared format, judged by their signature and headers (`422 content_mismatch`; its `detail` names the format the bytes are when they are another supported one), with a well-formed header (`truncated`, `malformed`), a width and height of at least 1 (`invalid_dimensions`), at most 65,535 pixels per side and 100,000,000 pixels in all (`too_many_pixels`). Width and height come from the headers, without decoding a pixel, as encoded: before EXIF `Orientation` or HEIF `irot` is applied, so a portrait photo from a phone camera may report `width` > `height`. No pixel data is checked beyond the headers.\n\n**Size.** An image is at most `--image-max-bytes` (10 MiB by default): a larger raw body or file part is `413 image_too_large`. The body as a whole may be 64 KiB larger, room for the multipart framing and form fields; a body over `--image-max-bytes` + 64 KiB is `413 body_too_large`, answered as soon as `Content-Length` (or, chunked, the running count) passes it, and the connection closes. The bytes are stored exactly as sent, metadata such as EXIF (camera, GPS position) included: strip what must not be kept before uploading.\n\nThe image is stored in the deployment's storage (PostgreSQL or a file; the answer is the same) and is in the list once this answer is sent. A refused upload stores nothing.",
            "security": [{"bearer": []}],
            "requestBody": {
              "required": true,
              "content": {
                "image/jpeg": {"schema": {"type": "string", "contentMediaType": "image/jpeg"}},
                "image/png": {"schema": {"type": "string", "contentMediaType": "image/png"}},
                "image/gif": {"schema": {"type": "string", "contentMediaType": "image/gif"}},
                "image/webp": {"schema": {"type": "string", "contentMediaType": "image/webp"}},
                "image/heic": {"schema": {"type": "string", "contentMediaType": "image/heic"}},
                "multipart/form-data": {
                  "schema": {
                    "type": "object",
                    "description": "One file part (a part with a `filename`), under any field name; `file` is the usual one. Other fields are ignored.",
                    "properties": {
                      "file": {"type": "string", "contentMediaType": "application/octet-stream", "description": "The image's bytes."}
                    },
                    "required": ["file"]
                  },
                  "encoding": {
                    "file": {"contentType": "image/jpeg, image/png, image/gif, image/webp, image/heic, application/octet-stream"}
                  }
                }
              }
            },
            "responses": {
              "201": {
                "description": "Stored.",
                "headers": {
                  "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"},
                  "Location": {"$ref": "#/components/headers/ImageLocation"}
                },
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Image"}}}
              },
              "400": {
                "description": "The multipart body is malformed: `malformed` (the framing or a part's headers break RFC 7578/2046, e.g. no closing delimiter, a bare LF, a part without a `form-data` `Content-Disposition` with a `name`, a repeated parameter), `part_head_too_large` (a part's headers over 8 KiB), `too_many_parts` (over 16). The connection stays open. Also malformed HTTP, as for any operation (see `BadRequest`; the connection closes).",
                "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}},
                "content": {
                  "application/problem+json": {
                    "schema": {
                      "allOf": [{"$ref": "#/components/schemas/Problem"}],
                      "properties": {
                        "code": {
                          "enum": [
                            "malformed",
                            "part_head_too_large",
                            "too_many_parts",
                            "invalid_request_line",
                            "invalid_method",
                            "invalid_target",
                            "invalid_version",
                            "bare_lf",
                            "bare_cr",
                            "obs_fold",
                            "whitespace_before_colon",
                            "invalid_field_name",
                            "invalid_field_value",
                            "missing_host",
                            "duplicate_host",
                            "invalid_host",
                            "duplicate_content_length",
                            "invalid_content_length",
                            "content_length_with_transfer_encoding",
                            "chunked_not_final",
                            "transfer_encoding_http10",
                            "invalid_chunk_size",
                            "chunk_size_overflow",
                            "invalid_chunk_extension",
                            "chunk_extension_too_long",
                            "invalid_chunk_terminator",
                            "invalid_trailer"
                          ]
                        }
                      }
                    }
                  }
                }
              },
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "413": {
                "description": "`image_too_large`: the image (the raw body or the file part) is over `--image-max-bytes`, 10 MiB by default. `body_too_large`: the whole body is over `--image-max-bytes` + 64 KiB; answered before the body is read when `Content-Length` says so, and the connection closes.",
                "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}},
                "content": {
                  "application/problem+json": {
                    "schema": {
                      "allOf": [{"$ref": "#/components/schemas/Problem"}],
                      "properties": {"code": {"enum": ["image_too_large", "body_too_large"]}}
                    }
                  }
                }
              },
              "415": {
                "description": "`unsupported_media_type`: the `Content-Type` (or the file part's) is missing, not one of the five image types, or `multipart/form-data` without a valid `boundary`.",
                "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}},
                "content": {
                  "application/problem+json": {
                    "schema": {
                      "allOf": [{"$ref": "#/components/schemas/Problem"}],
                      "properties": {"code": {"enum": ["unsupported_media_type"]}}
                    }
                  }
                }
              },
              "422": {
                "description": "Not stored. `content_mismatch`: the bytes are not the declared format (or, sniffed, no supported format); `empty_image`: no bytes; `truncated`: the bytes end inside the header; `malformed`: the header's structure is broken; `invalid_dimensions`: a width or height of 0; `too_many_pixels`: a side over 65,535 or over 100,000,000 pixels in all; `no_file_part`, `multiple_file_parts`: a multipart body without exactly one file part.",
                "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}},
                "content": {
                  "application/problem+json": {
                    "schema": {
                      "allOf": [{"$ref": "#/components/schemas/Problem"}],
                      "properties": {
                        "code": {
                          "enum": [
                            "content_mismatch",
                            "empty_image",
                            "truncated",
                            "malformed",
                            "invalid_dimensions",
                            "too_many_pixels",
                            "no_file_part",
                            "multiple_file_parts"
                          ]
                        }
                      }
                    }
                  }
                }
              },
              "503": {"$ref": "#/components/responses/ServiceUnavailable"},
              "default": {"$ref": "#/components/responses/HTTPError"}
            }
          }
        },
        "/users/me/images/{id}": {
          "parameters": [{"$ref": "#/components/parameters/X-Request-Id"}],
          "get": {
            "tags": ["images"],
            "operationId": "downloadImage",
            "summary": "Download an image's bytes",
            "description": "The bytes exactly as uploaded, with the image's `contentType` and `X-Content-Type-Options: nosniff`. `HEAD` answers the same status and headers without the body.\n\n**Caching.** The bytes behind an id never change, so the answer is `Cache-Control: private, max-age=31536000, immutable`: the client may keep it for a year without asking again, and no shared cache may keep it. `ETag` is the quoted lowercase hex SHA-256 of the bytes (the image's `sha256` in quotes): strong, the same for the same bytes in either storage. `Last-Modified` is `createdAt` (to the second); `If-Modified-Since` is not evaluated, use `If-None-Match`.\n\n**Conditional requests.** `If-None-Match` naming the `ETag` (weak comparison, a list, or `*`) answers `304` without a body; it is evaluated before `Range`.\n\n**Ranges.** `Accept-Ranges: bytes`. A `Range` of one satisfiable byte range (`bytes=0-499`, `bytes=500-`, `bytes=-500`; a last position past the end is clamped) answers `206` with `Content-Range`. Several ranges (`bytes=0-1,5-6`) and units other than `bytes` are ignored: the whole image, `200` (no `multipart/byteranges`). A range that starts at or past the end, `bytes=-0`, a last position before the first and a malformed `bytes=` value are `416 range_not_satisfiable` with `Content-Range: bytes */<size>`. `If-Range` lets the `Range` apply only when it is exactly the current `ETag` (strong comparison: a weak tag never matches); any other value, an HTTP-date included, sends the whole image with `200`.",
            "security": [{"bearer": []}],
            "parameters": [
              {"$ref": "#/components/parameters/ImageID"},
              {"$ref": "#/components/parameters/If-None-Match"},
              {"$ref": "#/components/parameters/Range"},
              {"$ref": "#/components/parameters/If-Range"}
            ],
            "responses": {
              "200": {
                "description": "The whole image.",
                "headers": {
                  "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"},
                  "ETag": {"$ref": "#/components/headers/ImageETag"},
                  "Cache-Control": {"$ref": "#/components/headers/Cache-Control-Immutable"},
                  "Last-Modified": {"$ref": "#/components/headers/Last-Modified"},
                  "Accept-Ranges": {"$ref": "#/components/headers/Accept-Ranges"},
                  "X-Content-Type-Options": {"$ref": "#/components/headers/X-Content-Type-Options"}
                },
                "content": {
                  "image/jpeg": {"schema": {"type": "string", "contentMediaType": "image/jpeg"}},
                  "image/png": {"schema": {"type": "string", "contentMediaType": "image/png"}},
                  "image/gif": {"schema": {"type": "string", "contentMediaType": "image/gif"}},
                  "image/webp": {"schema": {"type": "string", "contentMediaType": "image/webp"}},
                  "image/heic": {"schema": {"type": "string", "contentMediaType": "image/heic"}}
                }
              },
              "206": {
                "description": "The one range asked for, in the image's `Content-Type`.",
                "headers": {
                  "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"},
                  "Content-Range": {"$ref": "#/components/headers/Content-Range"},
                  "ETag": {"$ref": "#/components/headers/ImageETag"},
                  "Cache-Control": {"$ref": "#/components/headers/Cache-Control-Immutable"},
                  "Last-Modified": {"$ref": "#/components/headers/Last-Modified"},
                  "Accept-Ranges": {"$ref": "#/components/headers/Accept-Ranges"},
                  "X-Content-Type-Options": {"$ref": "#/components/headers/X-Content-Type-Options"}
                },
                "content": {
                  "image/jpeg": {"schema": {"type": "string", "contentMediaType": "image/jpeg"}},
                  "image/png": {"schema": {"type": "string", "contentMediaType": "image/png"}},
                  "image/gif": {"schema": {"type": "string", "contentMediaType": "image/gif"}},
                  "image/webp": {"schema": {"type": "string", "contentMediaType": "image/webp"}},
                  "image/heic": {"schema": {"type": "string", "contentMediaType": "image/heic"}}
                }
              },
              "304": {
                "description": "`If-None-Match` names the `ETag`; no body.",
                "headers": {
                  "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"},
                  "ETag": {"$ref": "#/components/headers/ImageETag"},
                  "Cache-Control": {"$ref": "#/components/headers/Cache-Control-Immutable"},
                  "Last-Modified": {"$ref": "#/components/headers/Last-Modified"},
                  "Accept-Ranges": {"$ref": "#/components/headers/Accept-Ranges"}
                }
              },
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "404": {"$ref": "#/components/responses/ImageNotFound"},
              "416": {
                "description": "`range_not_satisfiable`: the `Range` is malformed or selects no byte of the image.",
                "headers": {
                  "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"},
                  "Content-Range": {"$ref": "#/components/headers/Content-Range-Unsatisfied"}
                },
                "content": {
                  "application/problem+json": {
                    "schema": {
                      "allOf": [{"$ref": "#/components/schemas/Problem"}],
                      "properties": {"code": {"enum": ["range_not_satisfiable"]}}
                    }
                  }
                }
              },
              "503": {"$ref": "#/components/responses/ServiceUnavailable"},
              "default": {"$ref": "#/components/responses/HTTPError"}
            }
          },
          "delete": {
            "tags": ["images"],
            "operationId": "deleteImage",
            "summary": "Delete an image",
            "description": "Deletes the image's metadata and bytes (a file is removed right after the database commit; one that cannot be is removed by the start-up sweep). Its URL is `404` from then on, though clients may still hold cached copies (`immutable`). A request body is ignored.",
            "security": [{"bearer": []}],
            "parameters": [{"$ref": "#/components/parameters/ImageID"}],
            "responses": {
              "204": {"description": "Deleted.", "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}}},
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "404": {"$ref": "#/components/responses/ImageNotFound"},
              "503": {"$ref": "#/components/responses/ServiceUnavailable"},
              "default": {"$ref": "#/components/responses/HTTPError"}
            }
          }
        },
        "/users/schema": {
          "parameters": [{"$ref": "#/components/parameters/X-Request-Id"}],
          "get": {
            "tags": ["profile"],
            "operationId": "fieldTypes",
            "summary": "The deployment's custom field types",
            "description": "Needs a session (any signed-in user). Every field name the deployment has typed, sorted by name: pinned ones, and ones fixed by a first write, even when no user holds a value any more (a type never changes once set).",
            "security": [{"bearer": []}],
            "responses": {
              "200": {
                "description": "The field types.",
                "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}},
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/FieldTypes"}}}
              },
              "401": {"$ref": "#/components/responses/Unauthorized"},
              "503": {"$ref": "#/components/responses/ServiceUnavailable"},
              "default": {"$ref": "#/components/responses/HTTPError"}
            }
          }
        }
      },
      "components": {
        "schemas": {
          "User": {
            "type": "object",
            "description": "A user as the API shows it.",
            "required": ["id", "email", "firstname", "lastname", "emailVerified", "createdAt", "updatedAt", "data"],
            "properties": {
              "id": {"type": "string", "readOnly": true, "description": "Opaque; do not parse."},
              "email": {
                "type": "string",
                "format": "email",
                "maxLength": 254,
                "description": "The login identity. Leading and trailing whitespace is trimmed; the rest must be at most 254 bytes, `local@domain` (split at the last `@`): an ASCII dot-atom local part of at most 64 bytes (letters, digits, ``!#$%&'*+-/=?^_`{|}~`` and dots between them) and a DNS host name of at most 253 bytes with at least two labels, each 1–63 letters, digits or hyphens, not starting or ending with a hyphen, the last one not all digits. Quoted local parts, IP literals and internationalised addresses are refused. Anything else is `422 invalid_email`. Stored as sent (trimmed); compared case-insensitively (ASCII), so it is unique regardless of case (`409 email_taken`)."
              },
              "firstname": {
                "type": "string",
                "maxLength": 100,
                "description": "A string of at most 100 characters (Unicode scalar values; more is `422 invalid_value`); may be empty. `null` is stored as the empty string."
              },
              "lastname": {
                "type": "string",
                "maxLength": 100,
                "description": "A string of at most 100 characters (Unicode scalar values; more is `422 invalid_value`); may be empty. `null` is stored as the empty string."
              },
              "emailVerified": {
                "type": "boolean",
                "readOnly": true,
                "description": "Whether the email address is verified; `false` at registration and after every change of `email` other than in letter case."
              },
              "createdAt": {
                "type": "string",
                "format": "date-time",
                "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$",
                "description": "When the user registered. RFC 3339 UTC with milliseconds.",
                "examples": ["2026-11-29T17:39:01.123Z"],
                "readOnly": true
              },
              "updatedAt": {
                "type": "string",
                "format": "date-time",
                "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$",
                "description": "The last write to the account (profile, email or password). RFC 3339 UTC with milliseconds.",
                "examples": ["2026-11-29T17:39:01.123Z"],
                "readOnly": true
              },
              "data": {"$ref": "#/components/schemas/CustomFields"}
            },
            "examples": [
              {
                "id": "5f0c1a52-6f3e-4c1e-9a55-0b7d2e8f4a10",
                "email": "ayu@example.com",
                "firstname": "Ayu",
                "lastname": "Lestari",
                "emailVerified": false,
                "createdAt": "2026-11-29T17:39:01.123Z",
                "updatedAt": "2026-11-29T17:40:12.456Z",
                "data": {"dateOfBirth": "1994-05-17", "height": 177.5, "weight": 78, "isMarried": true}
              }
            ]
          },
          "CustomFields": {
            "type": "object",
            "description": "The app's custom profile fields. Names match `^[A-Za-z][A-Za-z0-9_]{0,63}$` (else `422 invalid_value` on `data.<name>`); at most 64 fields per user (`422 invalid_value` on `data`); values are JSON scalars (an array or object is `422 invalid_type`).\n\nEach name has one type for the whole deployment (see `GET /users/schema`): pinned by the deployment's field configuration (`--field-config`), or else fixed by the literal of the first accepted write: `true`/`false` → `boolean`; a number without fraction or exponent → `integer`, any other number → `double` (`2.0` and `1e2` are doubles); a string that is exactly a valid calendar date `YYYY-MM-DD` → `date`; an RFC 3339 date-time (`YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`) → `datetime`; any other string → `string`. A rejected write fixes no type. A later value of another type is `422 invalid_type` naming the field and both types (`detail` \"data.height must be a double\", `errors[].detail` \"expected double, got string\").\n\nAn integer literal is accepted for a `double` field and stored in canonical double form, so `180` comes back as `180.0`; doubles come back in their shortest round-trip form, always with a fraction or an exponent (`1e400` and other non-finite values are refused). A fraction or exponent for an `integer` field is refused, as is an integer outside the signed 64-bit range; a numeric string is a string, never a number. Strings are at most 4096 UTF-8 bytes and may not contain U+0000 (`422 invalid_value`). A `date` is a calendar date no time zone shifts; a `datetime` is kept as written, offset included. Because the first write decides, a free-text field whose first value looks like a date becomes a `date` field: deployments pin such fields in the field configuration.\n\nThe whole user (email, names and the JSON text of `data`) is at most 64 KiB (`422 invalid_value` on `data`).",
            "maxProperties": 64,
            "propertyNames": {"pattern": "^[A-Za-z][A-Za-z0-9_]{0,63}$"},
            "additionalProperties": {
              "description": "A custom field value: string, integer, double, boolean, date (`YYYY-MM-DD`) or datetime (RFC 3339). Strings are at most 4096 UTF-8 bytes (so at most 4096 characters) without U+0000.",
              "type": ["string", "number", "boolean"],
              "maxLength": 4096,
              "pattern": "^[^\\u0000]*$"
            },
            "examples": [{"dateOfBirth": "1994-05-17", "height": 177.5, "weight": 78, "isMarried": true}]
          },
          "CustomFieldsPatch": {
            "type": "object",
            "description": "Custom fields to set, each by the rules of `CustomFields`; a `null` member removes that field.",
            "propertyNames": {"pattern": "^[A-Za-z][A-Za-z0-9_]{0,63}$"},
            "additionalProperties": {
              "description": "A custom field value, or `null` to remove the field. Strings are at most 4096 UTF-8 bytes (so at most 4096 characters) without U+0000 (`422 invalid_value`).",
              "type": ["string", "number", "boolean", "null"],
              "maxLength": 4096,
              "pattern": "^[^\\u0000]*$"
            }
          },
          "FieldType": {
            "type": "string",
            "enum": ["string", "integer", "double", "boolean", "date", "datetime"],
            "description": "The type of a custom field, one for the whole deployment."
          },
          "FieldTypes": {
            "type": "object",
            "required": ["fields"],
            "properties": {
              "fields": {
                "type": "object",
                "propertyNames": {"pattern": "^[A-Za-z][A-Za-z0-9_]{0,63}$"},
                "additionalProperties": {"$ref": "#/components/schemas/FieldType"}
              }
            },
            "examples": [{"fields": {"dateOfBirth": "date", "height": "double", "isMarried": "boolean", "weight": "integer"}}]
          },
          "SessionBody": {
            "type": "object",
            "description": "A new session: the bearer token (shown only here) and the user.",
            "required": ["accessToken", "tokenType", "expiresAt", "user"],
            "properties": {
              "accessToken": {"type": "string", "description": "Send as `Authorization: Bearer <accessToken>`. Opaque."},
              "tokenType": {"const": "Bearer"},
              "expiresAt": {
                "type": "string",
                "format": "date-time",
                "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$",
                "description": "When the session ends if unused: the earlier of its absolute end and its idle end. RFC 3339 UTC with milliseconds.",
                "examples": ["2026-11-29T17:39:01.123Z"]
              },
              "user": {"$ref": "#/components/schemas/User"}
            }
          },
          "PasswordChanged": {
            "type": "object",
            "description": "The session that replaced the calling one, and how many other sessions were revoked.",
            "required": ["accessToken", "tokenType", "expiresAt", "user", "revokedSessions"],
            "properties": {
              "accessToken": {"type": "string", "description": "The new token; the old one no longer works."},
              "tokenType": {"const": "Bearer"},
              "expiresAt": {
                "type": "string",
                "format": "date-time",
                "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$",
                "description": "When the new session ends if unused. RFC 3339 UTC with milliseconds.",
                "examples": ["2026-11-29T17:39:01.123Z"]
              },
              "user": {"$ref": "#/components/schemas/User"},
              "revokedSessions": {
                "type": "integer",
                "minimum": 0,
                "description": "The user's other sessions revoked; the replaced calling session is not counted."
              }
            }
          },
          "SessionEntry": {
            "type": "object",
            "required": ["id", "createdAt", "lastSeenAt", "expiresAt", "userAgent", "current"],
            "properties": {
              "id": {"type": "string", "description": "Opaque; for `DELETE /users/me/sessions/{id}`."},
              "createdAt": {
                "type": "string",
                "format": "date-time",
                "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$",
                "description": "When the session started. RFC 3339 UTC with milliseconds.",
                "examples": ["2026-11-29T17:39:01.123Z"]
              },
              "lastSeenAt": {
                "type": "string",
                "format": "date-time",
                "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$",
                "description": "The session's last authenticated request, written at most once a minute. RFC 3339 UTC with milliseconds.",
                "examples": ["2026-11-29T17:39:01.123Z"]
              },
              "expiresAt": {
                "type": "string",
                "format": "date-time",
                "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$",
                "description": "The earlier of the absolute end (`createdAt` + lifetime) and `lastSeenAt` + the idle timeout. RFC 3339 UTC with milliseconds.",
                "examples": ["2026-11-29T17:39:01.123Z"]
              },
              "userAgent": {
                "type": ["string", "null"],
                "maxLength": 256,
                "description": "The `User-Agent` of the request that started the session (first 256 characters), or `null`."
              },
              "current": {"type": "boolean", "description": "Whether this is the session of the calling token."}
            }
          },
          "SessionList": {
            "type": "object",
            "required": ["sessions"],
            "properties": {"sessions": {"type": "array", "items": {"$ref": "#/components/schemas/SessionEntry"}}}
          },
          "Image": {
            "type": "object",
            "description": "An image's metadata, the same whichever storage holds its bytes.",
            "required": ["id", "contentType", "byteSize", "sha256", "width", "height", "createdAt", "url"],
            "properties": {
              "id": {"type": "string", "description": "Opaque; do not parse."},
              "contentType": {
                "type": "string",
                "enum": ["image/jpeg", "image/png", "image/gif", "image/webp", "image/heic"],
                "description": "The format the bytes were checked to be; the download's `Content-Type`."
              },
              "byteSize": {"type": "integer", "minimum": 1, "description": "The number of bytes, at most `--image-max-bytes`."},
              "sha256": {
                "type": "string",
                "pattern": "^[0-9a-f]{64}$",
                "description": "The lowercase hex SHA-256 of the bytes; the download's `ETag` is this in quotes."
              },
              "width": {
                "type": "integer",
                "minimum": 1,
                "maximum": 65535,
                "description": "In pixels, as encoded: before EXIF `Orientation` or HEIF `irot` is applied."
              },
              "height": {
                "type": "integer",
                "minimum": 1,
                "maximum": 65535,
                "description": "In pixels, as encoded: before EXIF `Orientation` or HEIF `irot` is applied. `width` × `height` is at most 100,000,000."
              },
              "createdAt": {
                "type": "string",
                "format": "date-time",
                "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$",
                "description": "When the upload was stored. RFC 3339 UTC with milliseconds.",
                "examples": ["2026-11-29T17:39:01.123Z"]
              },
              "url": {
                "type": "string",
                "pattern": "^/users/me/images/[^/]+$",
                "description": "Where to download the bytes: `/users/me/images/{id}`, relative to the API's base URL (the same as `Location`)."
              }
            },
            "examples": [
              {
                "id": "0b6f8e4c-2d1a-4f7e-9c3b-5a8d7e6f1c20",
                "contentType": "image/jpeg",
                "byteSize": 2481152,
                "sha256": "9f2c4d1b7a6e5f3c8d0b1a2e4f6c8d0b1a3e5f7c9d1b3a5e7f9c1d3b5a7e9f1c",
                "width": 4032,
                "height": 3024,
                "createdAt": "2026-11-29T17:41:07.089Z",
                "url": "/users/me/images/0b6f8e4c-2d1a-4f7e-9c3b-5a8d7e6f1c20"
              }
            ]
          },
          "ImagePage": {
            "type": "object",
            "description": "One page of the user's images, oldest first.",
            "required": ["images", "next"],
            "properties": {
              "images": {"type": "array", "maxItems": 100, "items": {"$ref": "#/components/schemas/Image"}},
              "next": {
                "type": ["string", "null"],
                "description": "The opaque cursor of the next page, to send as `after`; `null` on the last page."
              }
            }
          },
          "Health": {"type": "object", "required": ["status"], "properties": {"status": {"const": "ok"}}},
          "Ready": {"type": "object", "required": ["status"], "properties": {"status": {"const": "ready"}}},
          "RegisterRequest": {
            "type": "object",
            "required": ["email", "password"],
            "additionalProperties": false,
            "properties": {
              "email": {
                "type": "string",
                "format": "email",
                "description": "The login identity. Leading and trailing whitespace is trimmed; the rest must be at most 254 bytes, `local@domain` (split at the last `@`): an ASCII dot-atom local part of at most 64 bytes (letters, digits, ``!#$%&'*+-/=?^_`{|}~`` and dots between them) and a DNS host name of at most 253 bytes with at least two labels, each 1–63 letters, digits or hyphens, not starting or ending with a hyphen, the last one not all digits. Quoted local parts, IP literals and internationalised addresses are refused. Anything else is `422 invalid_email`. Stored as sent (trimmed); compared case-insensitively (ASCII), so it is unique regardless of case (`409 email_taken`)."
              },
              "password": {
                "type": "string",
                "minLength": 8,
                "maxLength": 1024,
                "format": "password",
                "description": "At least 8 characters (Unicode scalar values) and at most 1024 UTF-8 bytes, else `422 weak_password`; checked before any hashing."
              },
              "firstname": {
                "type": ["string", "null"],
                "maxLength": 100,
                "pattern": "^[^\\u0000]*$",
                "description": "A string of at most 100 characters (Unicode scalar values; more is `422 invalid_value`) without U+0000 (`422 invalid_value`: PostgreSQL text cannot hold it); may be empty. `null` is stored as the empty string. Omitted: `\"\"`."
              },
              "lastname": {
                "type": ["string", "null"],
                "maxLength": 100,
                "pattern": "^[^\\u0000]*$",
                "description": "A string of at most 100 characters (Unicode scalar values; more is `422 invalid_value`) without U+0000 (`422 invalid_value`: PostgreSQL text cannot hold it); may be empty. `null` is stored as the empty string. Omitted: `\"\"`."
              },
              "data": {
                "oneOf": [{"allOf": [{"$ref": "#/components/schemas/CustomFieldsPatch"}], "maxProperties": 64}, {"type": "null"}],
                "description": "Initial custom fields (see `CustomFields`); `null` members and `data: null` set nothing."
              }
            }
          },
          "SignInRequest": {
            "type": "object",
            "required": ["email", "password"],
            "additionalProperties": false,
            "properties": {
              "email": {"type": "string", "description": "Trimmed and compared case-insensitively."},
              "password": {"type": "string", "format": "password"}
            }
          },
          "SignOutRequest": {
            "type": "object",
            "additionalProperties": false,
            "properties": {
              "scope": {
                "type": "string",
                "enum": ["current", "others", "all"],
                "default": "current",
                "description": "`current`: the calling session; `others`: every other session of the user; `all`: every session of the user, the calling one included."
              }
            }
          },
          "ProfileReplacement": {
            "type": "object",
            "required": ["email"],
            "additionalProperties": false,
            "properties": {
              "email": {
                "type": "string",
                "format": "email",
                "description": "The login identity. Leading and trailing whitespace is trimmed; the rest must be at most 254 bytes, `local@domain` (split at the last `@`): an ASCII dot-atom local part of at most 64 bytes (letters, digits, ``!#$%&'*+-/=?^_`{|}~`` and dots between them) and a DNS host name of at most 253 bytes with at least two labels, each 1–63 letters, digits or hyphens, not starting or ending with a hyphen, the last one not all digits. Quoted local parts, IP literals and internationalised addresses are refused. Anything else is `422 invalid_email`. Stored as sent (trimmed); compared case-insensitively (ASCII), so it is unique regardless of case (`409 email_taken`)."
              },
              "firstname": {
                "type": ["string", "null"],
                "maxLength": 100,
                "pattern": "^[^\\u0000]*$",
                "description": "A string of at most 100 characters (Unicode scalar values; more is `422 invalid_value`) without U+0000 (`422 invalid_value`: PostgreSQL text cannot hold it); may be empty. `null` is stored as the empty string. Omitted: `\"\"`."
              },
              "lastname": {
                "type": ["string", "null"],
                "maxLength": 100,
                "pattern": "^[^\\u0000]*$",
                "description": "A string of at most 100 characters (Unicode scalar values; more is `422 invalid_value`) without U+0000 (`422 invalid_value`: PostgreSQL text cannot hold it); may be empty. `null` is stored as the empty string. Omitted: `\"\"`."
              },
              "data": {
                "oneOf": [{"allOf": [{"$ref": "#/components/schemas/CustomFieldsPatch"}], "maxProperties": 64}, {"type": "null"}],
                "description": "Replaces every custom field; omitted or `null`: none."
              },
              "id": {"description": "Read-only: ignored."},
              "createdAt": {"description": "Read-only: ignored."},
              "updatedAt": {"description": "Read-only: ignored."},
              "emailVerified": {"description": "Read-only: ignored."}
            }
          },
          "ProfilePatch": {
            "type": "object",
            "description": "A JSON Merge Patch (RFC 7396) of the editable representation.",
            "additionalProperties": false,
            "properties": {
              "email": {
                "type": "string",
                "format": "email",
                "description": "The login identity. Leading and trailing whitespace is trimmed; the rest must be at most 254 bytes, `local@domain` (split at the last `@`): an ASCII dot-atom local part of at most 64 bytes (letters, digits, ``!#$%&'*+-/=?^_`{|}~`` and dots between them) and a DNS host name of at most 253 bytes with at least two labels, each 1–63 letters, digits or hyphens, not starting or ending with a hyphen, the last one not all digits. Quoted local parts, IP literals and internationalised addresses are refused. Anything else is `422 invalid_email`. Stored as sent (trimmed); compared case-insensitively (ASCII), so it is unique regardless of case (`409 email_taken`)."
              },
              "firstname": {
                "type": ["string", "null"],
                "maxLength": 100,
                "pattern": "^[^\\u0000]*$",
                "description": "A string of at most 100 characters (Unicode scalar values; more is `422 invalid_value`) without U+0000 (`422 invalid_value`: PostgreSQL text cannot hold it); may be empty. `null` is stored as the empty string."
              },
              "lastname": {
                "type": ["string", "null"],
                "maxLength": 100,
                "pattern": "^[^\\u0000]*$",
                "description": "A string of at most 100 characters (Unicode scalar values; more is `422 invalid_value`) without U+0000 (`422 invalid_value`: PostgreSQL text cannot hold it); may be empty. `null` is stored as the empty string."
              },
              "data": {
                "oneOf": [{"$ref": "#/components/schemas/CustomFieldsPatch"}, {"type": "null"}],
                "description": "Merged into the custom fields; `null` removes them all."
              },
              "id": {"description": "Read-only: ignored."},
              "createdAt": {"description": "Read-only: ignored."},
              "updatedAt": {"description": "Read-only: ignored."},
              "emailVerified": {"description": "Read-only: ignored."}
            }
          },
          "PasswordChangeRequest": {
            "type": "object",
            "required": ["oldPassword", "newPassword"],
            "additionalProperties": false,
            "properties": {
              "oldPassword": {"type": "string", "format": "password"},
              "newPassword": {
                "type": "string",
                "format": "password",
                "minLength": 8,
                "maxLength": 1024,
                "description": "At least 8 characters, at most 1024 UTF-8 bytes, different from `oldPassword`."
              },
              "confirmPassword": {
                "type": "string",
                "format": "password",
                "description": "Optional; when sent it must equal `newPassword` (`422 password_mismatch`)."
              }
            }
          },
          "DeleteAccountRequest": {
            "type": "object",
            "required": ["password"],
            "additionalProperties": false,
            "properties": {"password": {"type": "string", "format": "password", "description": "The current password."}}
          },
          "Problem": {
            "type": "object",
            "description": "An RFC 9457 problem document (`application/problem+json`).",
            "required": ["type", "title", "status", "code", "detail"],
            "properties": {
              "type": {"type": "string", "const": "about:blank"},
              "title": {"type": "string", "description": "The reason phrase of the status."},
              "status": {"type": "integer", "minimum": 400, "maximum": 599},
              "code": {
                "type": "string",
                "pattern": "^[a-z0-9_]+$",
                "description": "Stable and machine-readable; the codes of each status are listed in the API description and on each response."
              },
              "detail": {"type": "string", "description": "For people; may change between versions."},
              "errors": {
                "type": "array",
                "minItems": 1,
                "items": {"$ref": "#/components/schemas/FieldProblem"},
                "maxItems": 20,
                "description": "Present only for validation failures: one entry per offending field, the first 20."
              },
              "errorCount": {
                "type": "integer",
                "minimum": 21,
                "description": "Present only when more fields are wrong than `errors` lists: how many."
              }
            },
            "examples": [
              {
                "type": "about:blank",
                "title": "Unprocessable Content",
                "status": 422,
                "code": "invalid_type",
                "detail": "data.height must be a double",
                "errors": [{"field": "data.height", "code": "invalid_type", "detail": "expected double, got string"}]
              }
            ]
          },
          "FieldProblem": {
            "type": "object",
            "required": ["field", "code", "detail"],
            "properties": {
              "field": {"type": "string", "description": "A JSON path into the request body: `email`, `data.height`."},
              "code": {
                "type": "string",
                "enum": [
                  "unknown_field",
                  "password_not_allowed",
                  "invalid_type",
                  "invalid_value",
                  "field_limit_reached",
                  "invalid_email",
                  "weak_password",
                  "password_mismatch",
                  "password_unchanged",
                  "email_taken"
                ]
              },
              "detail": {"type": "string"}
            }
          }
        },
        "responses": {
          "BadRequest": {
            "description": "Malformed: `invalid_json` (not JSON, duplicate keys, a number literal over 100 characters), or malformed HTTP (the connection closes after the answer).",
            "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}},
            "content": {
              "application/problem+json": {
                "schema": {
                  "allOf": [{"$ref": "#/components/schemas/Problem"}],
                  "properties": {
                    "code": {
                      "enum": [
                        "invalid_json",
                        "invalid_request_line",
                        "invalid_method",
                        "invalid_target",
                        "invalid_version",
                        "bare_lf",
                        "bare_cr",
                        "obs_fold",
                        "whitespace_before_colon",
                        "invalid_field_name",
                        "invalid_field_value",
                        "missing_host",
                        "duplicate_host",
                        "invalid_host",
                        "duplicate_content_length",
                        "invalid_content_length",
                        "content_length_with_transfer_encoding",
                        "chunked_not_final",
                        "transfer_encoding_http10",
                        "invalid_chunk_size",
                        "chunk_size_overflow",
                        "invalid_chunk_extension",
                        "chunk_extension_too_long",
                        "invalid_chunk_terminator",
                        "invalid_trailer"
                      ]
                    }
                  }
                }
              }
            }
          },
          "Unauthorized": {
            "description": "No valid session: `missing_token` (no `Authorization` header) or `invalid_token` (not `Bearer <token>`, or a token that is unknown, expired or revoked).",
            "headers": {
              "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"},
              "WWW-Authenticate": {"$ref": "#/components/headers/WWW-Authenticate"}
            },
            "content": {
              "application/problem+json": {
                "schema": {
                  "allOf": [{"$ref": "#/components/schemas/Problem"}],
                  "properties": {"code": {"enum": ["missing_token", "invalid_token"]}}
                }
              }
            }
          },
          "InvalidPassword": {
            "description": "The current password is wrong; counted by the password throttle.",
            "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}},
            "content": {
              "application/problem+json": {
                "schema": {
                  "allOf": [{"$ref": "#/components/schemas/Problem"}],
                  "properties": {"code": {"enum": ["invalid_password"]}}
                }
              }
            }
          },
          "EmailTaken": {
            "description": "Another user has this email address (compared case-insensitively).",
            "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}},
            "content": {
              "application/problem+json": {
                "schema": {"allOf": [{"$ref": "#/components/schemas/Problem"}], "properties": {"code": {"enum": ["email_taken"]}}}
              }
            }
          },
          "PreconditionFailed": {
            "description": "`If-Match` names no current ETag: the user changed since it was read. Nothing changed.",
            "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}},
            "content": {
              "application/problem+json": {
                "schema": {
                  "allOf": [{"$ref": "#/components/schemas/Problem"}],
                  "properties": {"code": {"enum": ["precondition_failed"]}}
                }
              }
            }
          },
          "ContentTooLarge": {
            "description": "The body is larger than the server's limit (1 MiB by default, `--max-body-bytes`; JSON bodies are limited to 1 MiB in any case).",
            "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}},
            "content": {
              "application/problem+json": {
                "schema": {
                  "allOf": [{"$ref": "#/components/schemas/Problem"}],
                  "properties": {"code": {"enum": ["body_too_large"]}}
                }
              }
            }
          },
          "UnsupportedMediaType": {
            "description": "The `Content-Type` is missing or not one this operation accepts.",
            "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}},
            "content": {
              "application/problem+json": {
                "schema": {
                  "allOf": [{"$ref": "#/components/schemas/Problem"}],
                  "properties": {"code": {"enum": ["unsupported_media_type"]}}
                }
              }
            }
          },
          "TooManyAttempts": {
            "description": "Throttled (see *Throttles* in the API description): retry after `Retry-After` seconds.",
            "headers": {
              "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"},
              "Retry-After": {"$ref": "#/components/headers/Retry-After"}
            },
            "content": {
              "application/problem+json": {
                "schema": {
                  "allOf": [{"$ref": "#/components/schemas/Problem"}],
                  "properties": {"code": {"enum": ["too_many_attempts"]}}
                }
              }
            }
          },
          "ImageNotFound": {
            "description": "`image_not_found`: the user has no image with this id. An unknown id, one that is not well-formed and another user's image get the same answer.",
            "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}},
            "content": {
              "application/problem+json": {
                "schema": {
                  "allOf": [{"$ref": "#/components/schemas/Problem"}],
                  "properties": {"code": {"enum": ["image_not_found"]}}
                }
              }
            }
          },
          "ServiceUnavailable": {
            "description": "Try again after `Retry-After` seconds: `overloaded` (too many open connections, queued requests or password hashes at once; `Retry-After: 1`), `database_busy` (no database connection free within the acquire timeout; `Retry-After: 1`), `database_unavailable` (the database cannot be reached; `Retry-After: 2`). On a write, `database_unavailable` can also mean that the connection was lost before the commit was confirmed: the write may or may not have happened, so read the resource again (its `ETag`) before repeating a conditional write.",
            "headers": {
              "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"},
              "Retry-After": {"$ref": "#/components/headers/Retry-After"}
            },
            "content": {
              "application/problem+json": {
                "schema": {
                  "allOf": [{"$ref": "#/components/schemas/Problem"}],
                  "properties": {"code": {"enum": ["overloaded", "database_busy", "database_unavailable"]}}
                }
              }
            }
          },
          "Overloaded": {
            "description": "`overloaded`: too many open connections; try again after `Retry-After` (1) seconds.",
            "headers": {
              "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"},
              "Retry-After": {"$ref": "#/components/headers/Retry-After"}
            },
            "content": {
              "application/problem+json": {
                "schema": {"allOf": [{"$ref": "#/components/schemas/Problem"}], "properties": {"code": {"enum": ["overloaded"]}}}
              }
            }
          },
          "HTTPError": {
            "description": "Answers of the HTTP layer, for any operation: `400` malformed HTTP, `404 not_found` (unknown path), `405 method_not_allowed` (with `Allow`), `408 header_timeout`/`body_timeout`, `413 body_too_large`, `414 request_line_too_long`, `417 unsupported_expectation`, `431 header_field_too_large`/`headers_too_large`/`too_many_headers`, `500 internal_error`, `501 method_not_implemented`/`unsupported_transfer_coding`, `505 unsupported_version`. See the table in the API description.",
            "headers": {
              "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"},
              "Allow": {"$ref": "#/components/headers/Allow"}
            },
            "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
          }
        },
        "parameters": {
          "X-Request-Id": {
            "name": "X-Request-Id",
            "in": "header",
            "required": false,
            "description": "The client's id for this request, echoed on the response and logged when it is 1–128 characters of `[A-Za-z0-9-_.:]`; otherwise ignored and replaced by a generated one (no error).",
            "schema": {"type": "string"}
          },
          "If-Match": {
            "name": "If-Match",
            "in": "header",
            "required": false,
            "description": "Makes the write conditional: one or more ETags (comma-separated) or `*`. When none is the user's current ETag the answer is `412 precondition_failed` and nothing changes.",
            "schema": {"type": "string"}
          },
          "If-None-Match": {
            "name": "If-None-Match",
            "in": "header",
            "required": false,
            "description": "One or more ETags (comma-separated, weak comparison) or `*`: when one is the current ETag the answer is `304 Not Modified` without a body.",
            "schema": {"type": "string"}
          },
          "ImageID": {
            "name": "id",
            "in": "path",
            "required": true,
            "description": "An image id, from the upload or `GET /users/me/images`.",
            "schema": {"type": "string"}
          },
          "ImageLimit": {
            "name": "limit",
            "in": "query",
            "required": false,
            "description": "Images per page, 1–100 (default 50); anything else is `422 invalid_limit`.",
            "schema": {"type": "integer", "minimum": 1, "maximum": 100, "default": 50}
          },
          "ImageCursor": {
            "name": "after",
            "in": "query",
            "required": false,
            "description": "The `next` of the previous page, unchanged: the page starts after the image it names. Opaque (today 32 base64url characters); a value that is not a cursor this server could have issued is `422 invalid_cursor`. Absent: the first page.",
            "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{32}$"}
          },
          "Range": {
            "name": "Range",
            "in": "header",
            "required": false,
            "description": "One byte range (`bytes=0-499`, `bytes=500-`, `bytes=-500`) answers `206`. Several ranges, or another unit, are ignored (`200`, the whole image); a malformed or unsatisfiable one is `416`.",
            "schema": {"type": "string"}
          },
          "If-Range": {
            "name": "If-Range",
            "in": "header",
            "required": false,
            "description": "The `Range` applies only when this is exactly the current `ETag` (strong comparison); otherwise, an HTTP-date included, the whole image is sent with `200`.",
            "schema": {"type": "string"}
          },
          "SessionID": {
            "name": "id",
            "in": "path",
            "required": true,
            "description": "A session id from `GET /users/me/sessions`.",
            "schema": {"type": "string"}
          }
        },
        "headers": {
          "X-Request-Id": {
            "description": "The request's id: the client's `X-Request-Id` when it is 1–128 characters of `[A-Za-z0-9-_.:]`, else one the server generates (opaque). On every response.",
            "schema": {"type": "string", "pattern": "^[A-Za-z0-9_.:-]{1,128}$"}
          },
          "ETag": {
            "description": "An opaque strong entity tag (a quoted string) of the user: it changes with every write to the account and differs between users. Send it back as is in `If-Match` or `If-None-Match`.",
            "schema": {"type": "string"}
          },
          "Location": {"description": "The new user's resource: `/users/me`.", "schema": {"type": "string", "const": "/users/me"}},
          "Retry-After": {
            "description": "Whole seconds to wait before trying again (at least 1).",
            "schema": {"type": "integer", "minimum": 1}
          },
          "WWW-Authenticate": {
            "description": "`Bearer` when no `Authorization` header was sent (and on `invalid_credentials`); `Bearer error=\"invalid_token\"` when the token is malformed, unknown, expired or revoked (RFC 6750).",
            "schema": {"type": "string"}
          },
          "Allow": {
            "description": "The methods the path supports, e.g. `GET, PUT, PATCH, DELETE, HEAD`.",
            "schema": {"type": "string"}
          },
          "ImageLocation": {
            "description": "The new image's URL: `/users/me/images/{id}`, the same as its `url`.",
            "schema": {"type": "string", "pattern": "^/users/me/images/[^/]+$"}
          },
          "ImageETag": {
            "description": "The image's strong entity tag: its lowercase hex SHA-256 in quotes. It never changes for an id.",
            "schema": {"type": "string", "pattern": "^\"[0-9a-f]{64}\"$"}
          },
          "Cache-Control-Immutable": {
            "description": "`private, max-age=31536000, immutable`: the bytes behind an image id never change; only the client may keep them, for a year, without revalidating.",
            "schema": {"type": "string", "const": "private, max-age=31536000, immutable"}
          },
          "Last-Modified": {
            "description": "The image's `createdAt`, as an HTTP-date (IMF-fixdate, to the second).",
            "schema": {"type": "string"}
          },
          "Accept-Ranges": {
            "description": "`bytes`: a single byte range may be asked for with `Range`.",
            "schema": {"type": "string", "const": "bytes"}
          },
          "Content-Range": {
            "description": "The range sent and the image's size: `bytes 0-499/1234`.",
            "schema": {"type": "string", "pattern": "^bytes [0-9]+-[0-9]+/[0-9]+$"}
          },
          "Content-Range-Unsatisfied": {
            "description": "The image's size: `bytes */1234`.",
            "schema": {"type": "string", "pattern": "^bytes \\*/[0-9]+$"}
          },
          "X-Content-Type-Options": {
            "description": "`nosniff`: browsers must use the `Content-Type`, never guess another.",
            "schema": {"type": "string", "const": "nosniff"}
          },
          "Cache-Control-No-Store": {
            "description": "`no-store`: no cache may keep the answer (it holds a token or session details).",
            "schema": {"type": "string", "const": "no-store"}
          },
          "Cache-Control-Private": {
            "description": "`private, no-cache`: caches must revalidate (with the ETag).",
            "schema": {"type": "string", "const": "private, no-cache"}
          }
        },
        "securitySchemes": {
          "bearer": {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "opaque",
            "description": "`Authorization: Bearer <accessToken>` with a token from registration, sign-in or password change. Accepted in this header only, never in a URL, cookie or body. The scheme name is case-insensitive. No header: `401 missing_token`; anything else that is not a live session's token: `401 invalid_token`."
          }
        }
      }
    }
    """#
}
