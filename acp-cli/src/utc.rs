//! Calendar dates of Unix times, in UTC (acp shows and saves UTC: no time zone database).
//!
//! Shared by the command (`cli::sessions`: when a conversation was saved) and the demo agent
//! (its store's `updatedAt`); neither reaches into the other for it.

/// The civil (UTC) date of a Unix time, and the seconds into that day (Howard Hinnant's
/// algorithm from days since the epoch).
pub fn civil_date(secs: u64) -> (i64, i64, i64, u64) {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d, rem)
}
