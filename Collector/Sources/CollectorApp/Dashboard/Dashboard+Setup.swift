import Foundation
import Logging

extension DashboardRoutes {
    /// Creates the account tables and, on a database without accounts, the `admin` account.
    /// Returns the admin password when it was generated (to show once). A store that does not
    /// implement `AccountStore` has no dashboard (logged as a warning).
    static func bootstrapAccounts(store: any CollectorStore, configuration: CollectorConfiguration, logger: Logger) async throws -> String? {
        guard let accountStore = store as? any AccountStore else {
            logger.warning("this database has no account storage; the dashboard is off")
            return nil
        }
        return try await AccountService.bootstrap(store: accountStore, configuredPassword: configuration.adminPassword, logger: logger)
    }

    /// The dashboard for `store`, or nil when the store lacks account storage or dashboard queries.
    static func make(store: any CollectorStore, configuration: CollectorConfiguration, metrics: CollectorMetrics,
                     logger: Logger) -> DashboardRoutes? {
        guard let accountStore = store as? any AccountStore, let queries = store as? any DashboardQueries else { return nil }
        let secure = configuration.publicURL?.lowercased().hasPrefix("https://") == true
        return DashboardRoutes(
            store: store, queries: queries,
            accounts: AccountService(store: accountStore, sessionLifetime: configuration.sessionLifetime, secureCookies: secure),
            sdkConfig: SDKConfigService(store: store, maxAge: configuration.sdkConfigMaxAge),
            publicURL: configuration.publicURL, metrics: metrics, logger: logger)
    }
}
