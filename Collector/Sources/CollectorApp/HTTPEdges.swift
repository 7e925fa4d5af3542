import CrashShieldProtocol
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Unknown routes (no route for the path, or none for its method) are answered with 404 the way
/// the rest of the collector answers: under `/api` the JSON error document
/// (`{"code": "route.unknown", "detail": ...}`), elsewhere the dashboard's HTML "Not found" page.
/// A `HEAD` request gets the same status and headers without the body.
struct NotFoundPageMiddleware<Context: RequestContext>: RouterMiddleware {
    static var code: String { "route.unknown" }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            let response = Self.response(path: request.uri.path)
            return request.method == .head ? response.createHeadResponse() : response
        }
    }

    static func response(path: String) -> Response {
        let failure = CollectorError.notFound(code, "there is nothing at this address")
        if path == "/api" || path.hasPrefix("/api/") {
            let body = JSONValue.object(["detail": .string(failure.message), "code": .string(failure.code)]).jsonData()
            return Response(status: .notFound, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: body)))
        }
        return DashboardRoutes.errorDocument(failure)
    }
}

/// `Strict-Transport-Security: max-age=31536000` on every answer, added only when the configured
/// public URL is `https://...` (the collector itself speaks plain HTTP behind a TLS proxy, so the
/// public URL is what says browsers reach it over HTTPS). No `includeSubDomains`: the collector
/// cannot know about the other hosts of its domain.
struct StrictTransportSecurityMiddleware<Context: RequestContext>: RouterMiddleware {
    static var value: String { "max-age=31536000" }

    /// Whether a collector with this public URL sends the header.
    static func applies(publicURL: String?) -> Bool {
        publicURL?.lowercased().hasPrefix("https://") == true
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            response = try error.response(from: request, context: context)
        }
        response.headers[.strictTransportSecurity] = Self.value
        return response
    }
}
