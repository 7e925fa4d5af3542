/// The SDK's conversions of a `Duration` to plain numbers. Integer ones truncate toward zero
/// (a fraction of the unit is dropped, for negative durations too) and clamp to `Int64`.
extension Duration {
    /// Whole nanoseconds, truncated toward zero, clamped to `Int64.min...Int64.max`.
    package var nanoseconds: Int64 { wholeUnits(per: 1_000_000_000) }

    /// Whole milliseconds, truncated toward zero, clamped to `Int64.min...Int64.max`.
    package var milliseconds: Int64 { wholeUnits(per: 1_000) }

    /// Seconds as a `Double` (the attoseconds as a fraction of a second).
    package var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// `components` in units of 1/`perSecond` s: seconds * perSecond + attoseconds / (1e18 / perSecond),
    /// the attoseconds truncated toward zero, clamped on overflow.
    private func wholeUnits(per perSecond: Int64) -> Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: perSecond)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, sumOverflow) = product.addingReportingOverflow(attoseconds / (1_000_000_000_000_000_000 / perSecond))
        if sumOverflow { return attoseconds < 0 ? .min : .max }
        return sum
    }
}
