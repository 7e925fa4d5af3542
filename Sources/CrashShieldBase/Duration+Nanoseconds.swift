extension Duration {
    /// Whole nanoseconds, clamped to `Int64`.
    package var nanosecondsClamped: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return product.addingReportingOverflow(attoseconds / 1_000_000_000).overflow ? .max : product + attoseconds / 1_000_000_000
    }
}
