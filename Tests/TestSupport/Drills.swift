import Glibc
import Testing

/// The process and cluster drills: a Patroni failover, pgbouncer, several instances, descriptor
/// exhaustion, slow readers, the binary's start-up, a real browser. They start processes of
/// their own and measure what a loaded machine would distort, so they do not share the machine
/// with the rest of the suite: `swift test` leaves them out, and `scripts/drills.sh` runs each
/// one alone, one after another, with a budget of its own (`EXOSPHERE_DRILLS=1` selects them).
public enum Drills {
    /// Whether this test process runs the drills (`EXOSPHERE_DRILLS=1`).
    public static let selected: Bool = {
        guard let value = getenv("EXOSPHERE_DRILLS") else { return false }
        return String(cString: value) == "1"
    }()
}

extension Trait where Self == ConditionTrait {
    /// A drill: run by `scripts/drills.sh`, alone, not by a plain `swift test`.
    public static var drill: Self {
        .enabled(if: Drills.selected, "a drill: scripts/drills.sh runs it alone")
    }
}
