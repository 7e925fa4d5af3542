import CollectorApp
import CrashShieldProtocol
import Foundation
import Testing

@Suite("Collector ingest")
struct IngestTests {
    @Test func envelopeWithEventIsStoredGroupedAndAnsweredWithItsID() async throws {
        try await Harness.run { harness in
            let id = Fixtures.eventID()
            let response = try await harness.post(body: Fixtures.envelope(event: Fixtures.exceptionEvent(id: id)))
            #expect(response.status == 200)
            #expect(response.json?["id"]?.stringValue == id)
            let issues = try await harness.issues()
            #expect(issues.count == 1)
            #expect(issues.first?["title"]?.stringValue == "ValueError: bad value")
            #expect(issues.first?["culprit"]?.stringValue == "parse")
            #expect(issues.first?["event_count"]?.intValue == 1)
            let stored = try await harness.api("/api/0/projects/\(harness.project.id)/events/\(id)")
            #expect(stored.status == 200)
            #expect(stored.json?["exception"]?["values"]?.arrayValue?.first?["type"]?.stringValue == "ValueError")
        }
    }

    @Test func everyAuthFormIsAcceptedAndWrongOrMissingKeysAreRefused() async throws {
        try await Harness.run { harness in
            let key = harness.project.publicKey
            let envelopePath = "/api/\(harness.project.id)/envelope/"
            var response = try await harness.post(body: Fixtures.envelope(event: Fixtures.exceptionEvent()),
                                                  headers: ["Authorization": "Sentry sentry_version=7, sentry_key=\(key)"])
            #expect(response.status == 200)
            response = try await harness.post("\(envelopePath)?sentry_version=7&sentry_key=\(key)",
                                              body: Fixtures.envelope(event: Fixtures.exceptionEvent()), headers: [:])
            #expect(response.status == 200)
            let dsn = "http://\(key)@localhost/\(harness.project.id)"
            response = try await harness.post(body: Fixtures.envelope(event: Fixtures.exceptionEvent(), header: ["dsn": .string(dsn)]), headers: [:])
            #expect(response.status == 200)
            #expect(try await harness.issues().first?["event_count"]?.intValue == 3)

            response = try await harness.post(body: Fixtures.envelope(event: Fixtures.exceptionEvent()), headers: [:])
            #expect(response.status == 401)
            #expect(response.json?["code"]?.stringValue == "auth.missing")
            response = try await harness.post(body: Fixtures.envelope(event: Fixtures.exceptionEvent()),
                                              headers: ["X-Sentry-Auth": "Sentry sentry_key=0123456789abcdef0123456789abcdef"])
            #expect(response.status == 403)
            #expect(response.json?["code"]?.stringValue == "auth.invalid_key")
            response = try await harness.post("/api/999/envelope/", body: Fixtures.envelope(event: Fixtures.exceptionEvent()))
            #expect(response.status == 403)
            let otherDSN = "http://0123456789abcdef0123456789abcdef@localhost/\(harness.project.id)"
            response = try await harness.post(body: Fixtures.envelope(event: Fixtures.exceptionEvent(), header: ["dsn": .string(otherDSN)]))
            #expect(response.status == 403)
            #expect(response.json?["code"]?.stringValue == "envelope.dsn_mismatch")
            #expect(try await harness.issues().first?["event_count"]?.intValue == 3)
        }
    }

    @Test(arguments: [true, false])
    func compressedBodiesAreDecompressed(gzip: Bool) async throws {
        try await Harness.run { harness in
            let id = Fixtures.eventID()
            let compressed = Fixtures.compress(Fixtures.envelope(event: Fixtures.exceptionEvent(id: id)), gzip: gzip)
            let response = try await harness.post(body: compressed, headers: ["X-Sentry-Auth": harness.authHeader, "Content-Encoding": gzip ? "gzip" : "deflate"])
            #expect(response.status == 200)
            #expect(response.json?["id"]?.stringValue == id)
        }
    }

    @Test func oversizedBodiesAndDecompressionBombsAreRefusedWith413() async throws {
        try await Harness.run({ configuration in
            configuration.limits.maxBodyBytes = 4096
            configuration.limits.maxDecompressedBytes = 64 * 1024
        }) { harness in
            let big = Fixtures.envelope(event: Fixtures.exceptionEvent(value: String(repeating: "x", count: 8000)))
            var response = try await harness.post(body: big)
            #expect(response.status == 413)
            #expect(response.json?["code"]?.stringValue == "body.too_large")
            // 2 MB of spaces compress to about 2 KB (under the body limit); refused once 64 KB are produced.
            let bomb = Fixtures.compress([UInt8](repeating: 0x20, count: 2_000_000), gzip: true)
            #expect(bomb.count <= 4096)
            response = try await harness.post(body: bomb, headers: ["X-Sentry-Auth": harness.authHeader, "Content-Encoding": "gzip"])
            #expect(response.status == 413)
            #expect(response.json?["code"]?.stringValue == "body.decompressed_too_large")
            #expect(try await harness.issues().isEmpty)
            // The server still accepts a good envelope afterwards.
            response = try await harness.post(body: Fixtures.envelope(event: Fixtures.exceptionEvent()))
            #expect(response.status == 200)
        }
    }

    /// An event item over the event limit is dropped alone; the session beside it
    /// is stored, the envelope is answered 200 (without an event id: no event was stored), and the
    /// drop is counted as an outcome (`too_large`, `error`) in the stats and in `/metrics`. A
    /// `/store/` body over the limit is the event itself: still 413.
    @Test func anEventOverTheEventLimitIsDroppedAndTheRestOfTheEnvelopeKept() async throws {
        try await Harness.run({ $0.limits.maxEventBytes = 2048 }) { harness in
            let now = ISO8601DateFormatter().string(from: Date())
            let session: Envelope.Item = .json(type: "session", [
                "sid": "s-big", "did": "u1", "init": true, "started": .string(now), "seq": 0, "timestamp": .string(now),
                "status": "ok", "errors": 0, "attrs": ["release": "app@3.0.0"],
            ])
            let id = Fixtures.eventID()
            let big = Fixtures.exceptionEvent(id: id, value: String(repeating: "y", count: 3000))
            var response = try await harness.post(body: Fixtures.envelope(event: big, extra: [session]))
            #expect(response.status == 200, "\(response.status) \(response.text)")
            #expect(response.json?["id"] == nil)
            #expect(try await harness.issues().isEmpty)
            #expect(try await harness.api("/api/0/projects/\(harness.project.id)/events/\(id)").status == 404)
            let health = try await harness.api("/api/0/projects/\(harness.project.id)/release-health").json
            let release = try #require(health?.arrayValue?.first)
            #expect(release["release"]?.stringValue == "app@3.0.0")
            #expect(release["sessions"]?.intValue == 1)
            var stats = try await harness.api("/api/0/projects/\(harness.project.id)/stats").json
            #expect(stats?["client_discarded"]?.intValue == 1)

            // Only the oversized event: 200, nothing stored but the outcome.
            response = try await harness.post(body: Fixtures.envelope(event: Fixtures.exceptionEvent(value: String(repeating: "z", count: 3000))))
            #expect(response.status == 200, "\(response.status) \(response.text)")
            #expect(response.text == "{}")
            stats = try await harness.api("/api/0/projects/\(harness.project.id)/stats").json
            #expect(stats?["client_discarded"]?.intValue == 2)
            let metrics = try await harness.client.execute("/metrics").text
            #expect(metrics.contains("collector_discarded_items_total{reason=\"too_large\",category=\"error\"} 2"), "\(metrics)")
            #expect(try await harness.issues().isEmpty)

            // The store endpoint's body is the event: refused whole.
            response = try await harness.post("/api/\(harness.project.id)/store/", body: [UInt8](big.jsonData()))
            #expect(response.status == 413)
            #expect(response.json?["code"]?.stringValue == "event.too_large")
        }
    }

    @Test func malformedInputIsRefusedWith400AndStoresNothing() async throws {
        try await Harness.run { harness in
            let good = Fixtures.envelope(event: Fixtures.exceptionEvent())
            let cases: [(String, [UInt8])] = [
                ("empty", []),
                ("header not JSON", Array("not json\n{\"type\":\"event\"}\n{}\n".utf8)),
                ("item header not JSON", Array("{}\n{type:event}\n{}\n".utf8)),
                ("length beyond the body", Array("{}\n{\"type\":\"event\",\"length\":500}\n{}\n".utf8)),
                ("event not JSON", Array("{}\n{\"type\":\"event\",\"length\":5}\nhello\n".utf8)),
                ("event id not hex", Fixtures.envelope(event: ["event_id": "zz", "message": "x"])),
                ("two events", Array("{}\n{\"type\":\"event\"}\n{}\n{\"type\":\"event\"}\n{}\n".utf8)),
                ("truncated gzip", Array(Fixtures.compress(good, gzip: true).prefix(20))),
                ("invalid UTF-8 in the event", Array("{}\n{\"type\":\"event\",\"length\":3}\n".utf8) + [0x22, 0xFF, 0x22, 0x0A]),
            ]
            for (name, body) in cases {
                var headers = ["X-Sentry-Auth": harness.authHeader]
                if name == "truncated gzip" { headers["Content-Encoding"] = "gzip" }
                let response = try await harness.post(body: body, headers: headers)
                #expect(response.status == 400, "\(name): \(response.status) \(response.text)")
                #expect(response.json?["code"]?.stringValue?.isEmpty == false, "\(name)")
            }
            #expect(try await harness.issues().isEmpty)
            let response = try await harness.post(body: Array("{}\n".utf8), headers: ["X-Sentry-Auth": harness.authHeader, "Content-Encoding": "br"])
            #expect(response.status == 415)
        }
    }

    /// A body in a coding the collector cannot decode (`br`, `zstd`, an unknown token, two codings
    /// stacked) is answered 415 `body.encoding` naming the accepted codings, with `Accept-Encoding`
    /// (RFC 7694), counted by reason in the metrics, and stores nothing; the spellings Relay lets
    /// through (`UTF-8`, `identity` in a list, any case) are read, and the server stays up.
    @Test func undecodableContentEncodingsAreRefusedWith415AndAcceptEncoding() async throws {
        try await Harness.run { harness in
            let plain = Fixtures.envelope(event: Fixtures.exceptionEvent())
            let gzipped = Fixtures.compress(plain, gzip: true)
            let refused: [(String, [UInt8])] = [
                ("br", plain), ("zstd", plain), ("compress", plain), ("x-unknown", plain),
                ("gzip, br", gzipped), ("br, gzip", gzipped), ("gzip, gzip", Fixtures.compress(gzipped, gzip: true)),
            ]
            for (encoding, body) in refused {
                let response = try await harness.post(body: body, headers: ["X-Sentry-Auth": harness.authHeader, "Content-Encoding": encoding])
                #expect(response.status == 415, "\(encoding): \(response.status) \(response.text)")
                #expect(response.json?["code"]?.stringValue == "body.encoding", "\(encoding)")
                let detail = response.json?["detail"]?.stringValue ?? ""
                #expect(detail.contains("gzip") && detail.contains("deflate"), "\(encoding): \(detail)")
                #expect(response.headers["accept-encoding"] == "gzip, deflate", "\(encoding)")
            }
            let metrics = try await harness.client.execute("/metrics").text
            #expect(metrics.contains("collector_rejected_requests_total{reason=\"body.encoding\"} \(refused.count)"))
            #expect(try await harness.issues().isEmpty)

            let accepted: [(String, [UInt8])] = [
                ("UTF-8", Fixtures.envelope(event: Fixtures.exceptionEvent())),
                ("identity, gzip", Fixtures.compress(Fixtures.envelope(event: Fixtures.exceptionEvent()), gzip: true)),
                (" GZIP ", Fixtures.compress(Fixtures.envelope(event: Fixtures.exceptionEvent()), gzip: true)),
                ("Deflate", Fixtures.compress(Fixtures.envelope(event: Fixtures.exceptionEvent()), gzip: false)),
                ("identity", Fixtures.envelope(event: Fixtures.exceptionEvent())),
            ]
            for (encoding, body) in accepted {
                let response = try await harness.post(body: body, headers: ["X-Sentry-Auth": harness.authHeader, "Content-Encoding": encoding])
                #expect(response.status == 200, "\(encoding): \(response.status) \(response.text)")
            }
            #expect(try await harness.issues().first?["event_count"]?.intValue == Int64(accepted.count))
        }
    }

    /// Envelopes Sentry's Relay refuses are refused with 400 and a code naming the problem: a byte
    /// order mark before the header, an item `length` written as `3.0`, a declared field given
    /// twice (`event_id`, an item's `type`); nothing is stored.
    @Test func envelopesRelayRefusesAreAnswered400WithTheirCode() async throws {
        try await Harness.run { harness in
            let id = Fixtures.eventID()
            let event = "{\"event_id\":\"\(id)\",\"message\":\"x\"}"
            let cases: [(String, String)] = [
                ("\u{FEFF}{\"event_id\":\"\(id)\"}\n{\"type\":\"event\"}\n\(event)\n", "envelope.header"),
                ("{\"event_id\":\"\(id)\"}\n{\"type\":\"event\",\"length\":\(event.utf8.count).0}\n\(event)\n", "envelope.length"),
                ("{\"event_id\":\"\(id)\",\"event_id\":\"\(Fixtures.eventID())\"}\n{\"type\":\"event\"}\n\(event)\n", "envelope.duplicate_field"),
                ("{\"event_id\":\"\(id)\"}\n{\"type\":\"attachment\",\"type\":\"event\"}\n\(event)\n", "envelope.duplicate_field"),
            ]
            for (text, code) in cases {
                let response = try await harness.post(body: Array(text.utf8))
                #expect(response.status == 400, "\(text.debugDescription): \(response.status) \(response.text)")
                #expect(response.json?["code"]?.stringValue == code, "\(text.debugDescription)")
            }
            #expect(try await harness.issues().isEmpty)
            // The same event in a well-formed envelope is stored.
            let good = "{\"event_id\":\"\(id)\"}\n{\"type\":\"event\",\"length\":\(event.utf8.count)}\n\(event)\n"
            #expect(try await harness.post(body: Array(good.utf8)).status == 200)
            #expect(try await harness.issues().count == 1)
        }
    }

    @Test func unknownItemTypesAreSkippedAndNewlineTerminatedItemsRead() async throws {
        try await Harness.run { harness in
            let id = Fixtures.eventID()
            let event = String(decoding: Fixtures.exceptionEvent(id: id).jsonData(), as: UTF8.self)
            // A profile item with a length, then the event without one (it runs to the newline), no final newline.
            let text = "{\"event_id\":\"\(id)\"}\n{\"type\":\"profile\",\"length\":3}\nabc\n{\"type\":\"event\"}\n\(event)"
            let response = try await harness.post(body: Array(text.utf8))
            #expect(response.status == 200)
            #expect(response.json?["id"]?.stringValue == id)
            #expect(try await harness.issues().count == 1)
        }
    }

    @Test func theSameEventIDIsStoredOnce() async throws {
        try await Harness.run { harness in
            let event = Fixtures.exceptionEvent()
            for _ in 0..<3 {
                #expect(try await harness.post(body: Fixtures.envelope(event: event)).status == 200)
            }
            let issues = try await harness.issues()
            #expect(issues.count == 1)
            #expect(issues.first?["event_count"]?.intValue == 1)
            let issueID = try #require(issues.first?["id"]?.intValue)
            #expect(try await harness.api("/api/0/issues/\(issueID)/events").json?.arrayValue?.count == 1)
            let metrics = try await harness.client.execute("/metrics")
            #expect(metrics.text.contains("collector_duplicate_events_total 2"))
        }
    }

    @Test func storeEndpointTakesOneJSONEvent() async throws {
        try await Harness.run { harness in
            let id = Fixtures.eventID()
            let response = try await harness.post("/api/\(harness.project.id)/store/", body: [UInt8](Fixtures.exceptionEvent(id: id).jsonData()),
                                                  headers: ["X-Sentry-Auth": harness.authHeader, "Content-Type": "application/json"])
            #expect(response.status == 200)
            #expect(response.json?["id"]?.stringValue == id)
            #expect(try await harness.issues().count == 1)
        }
    }

    @Test func floodPastTheRateLimitGets429WithRetryAfterAndSentryRateLimits() async throws {
        try await Harness.run({ configuration in
            configuration.rateLimitBurst = 3
            configuration.rateLimitPerSecond = 0.01
        }) { harness in
            var statuses: [Int] = []
            var limited: TestResponse?
            for _ in 0..<6 {
                let response = try await harness.post(body: Fixtures.envelope(event: Fixtures.exceptionEvent()))
                statuses.append(response.status)
                if response.status == 429 { limited = response }
            }
            #expect(statuses == [200, 200, 200, 429, 429, 429])
            let retryAfter = try #require(limited?.headers["retry-after"].flatMap { Int($0) })
            #expect(retryAfter >= 1)
            #expect(limited?.headers["x-sentry-rate-limits"]?.hasPrefix("\(retryAfter)::project") == true)
            #expect(try await harness.issues().first?["event_count"]?.intValue == 3)
            let metrics = try await harness.client.execute("/metrics").text
            #expect(metrics.contains("collector_rate_limited_total 3"))
            #expect(metrics.contains("collector_ingested_items_total{type=\"event\"} 3"))
        }
    }

    @Test func sessionsAttachmentsAndClientReportsAreCounted() async throws {
        try await Harness.run { harness in
            let now = ISO8601DateFormatter().string(from: Date())
            func session(_ sid: String, _ did: String, _ status: String, init isInit: Bool = true, seq: Int64 = 0) -> Envelope.Item {
                .json(type: "session", ["sid": .string(sid), "did": .string(did), "init": .bool(isInit), "started": .string(now), "seq": .int(seq),
                                        "timestamp": .string(now), "status": .string(status), "errors": 0, "attrs": ["release": "app@2.0.0"]])
            }
            let items: [Envelope.Item] = [
                session("s1", "u1", "ok"), session("s2", "u2", "crashed"), session("s3", "u2", "exited"),
                .json(type: "sessions", ["attrs": ["release": "app@2.0.0"], "aggregates": [["started": .string(now), "exited": 5, "crashed": 1]]]),
                Envelope.Item(type: "attachment", payload: Data("raw crash report".utf8), header: ["filename": "report.txt"]),
                .json(type: "client_report", ["timestamp": .string(now), "discarded_events": [["reason": "queue_overflow", "category": "error", "quantity": 4]]]),
            ]
            #expect(try await harness.post(body: Fixtures.envelope(extra: items)).status == 200)
            // A later update of a crashed session does not undo the crash.
            #expect(try await harness.post(body: Fixtures.envelope(extra: [session("s2", "u2", "exited", init: false, seq: 5)])).status == 200)
            let health = try await harness.api("/api/0/projects/\(harness.project.id)/release-health").json
            let release = try #require(health?.arrayValue?.first)
            #expect(release["release"]?.stringValue == "app@2.0.0")
            #expect(release["sessions"]?.intValue == 9)  // 3 updates + 6 aggregated
            #expect(release["crashed_sessions"]?.intValue == 2)  // one of each kind
            #expect(release["users"]?.intValue == 2)
            #expect(release["crashed_users"]?.intValue == 1)
            let stats = try await harness.api("/api/0/projects/\(harness.project.id)/stats").json
            #expect(stats?["attachments"]?.intValue == 1)
            #expect(stats?["client_discarded"]?.intValue == 4)
        }
    }

    @Test func healthAndManagementAuth() async throws {
        try await Harness.run { harness in
            let health = try await harness.client.execute("/health")
            #expect(health.status == 200)
            #expect(health.json?["status"]?.stringValue == "ok")
            #expect(try await harness.client.execute("/api/0/projects").status == 401)
            #expect(try await harness.client.execute("/api/0/projects", headers: ["Authorization": "Bearer nope"]).status == 401)
            let created = try await harness.api("/api/0/projects", method: "POST", json: ["name": "second"])
            #expect(created.status == 201)
            let key = try #require(created.json?["public_key"]?.stringValue)
            #expect(key.count == 32 && key.allSatisfy(\.isHexDigit))
        }
    }
}
