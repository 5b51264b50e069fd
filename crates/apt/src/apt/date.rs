//! Release and lock dates: a Release's `Date` and `Valid-Until` (RFC 2822, as Debian writes
//! them) read into seconds since the epoch, and the lock's `2024-02-10T09:56:43Z` form.

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day number ([`days_from_civil`] inverted).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

fn seconds(y: i64, mo: i64, d: i64, h: i64, mi: i64, s: i64) -> Option<i64> {
    let days_in = match mo {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        1..=12 => 31,
        _ => return None,
    };
    let ok = (1..=9999).contains(&y)
        && (1..=days_in).contains(&d)
        && (0..24).contains(&h)
        && (0..60).contains(&mi)
        && (0..=60).contains(&s);
    ok.then(|| days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s)
}

fn num(s: &str, digits: std::ops::RangeInclusive<usize>) -> Option<i64> {
    (digits.contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// A Release date as archives write it (RFC 1123 / 2822: `Sat, 10 Feb 2024 09:56:43 UTC`, the
/// weekday optional, the zone `UTC`, `GMT`, `Z` or `±HHMM`), in seconds since the epoch.
pub fn parse_release_date(text: &str) -> Option<i64> {
    let text = text.trim();
    let text = match text.split_once(',') {
        Some((_, rest)) => rest,
        None => text,
    };
    let parts: Vec<&str> = text.split_whitespace().collect();
    let [d, mon, y, hms, zone] = parts[..] else {
        return None;
    };
    let mo = MONTHS.iter().position(|m| m.eq_ignore_ascii_case(mon))? as i64 + 1;
    let mut t = hms.split(':');
    let (Some(h), Some(mi), Some(s), None) = (t.next(), t.next(), t.next(), t.next()) else {
        return None;
    };
    let local = seconds(
        num(y, 4..=4)?,
        mo,
        num(d, 1..=2)?,
        num(h, 1..=2)?,
        num(mi, 2..=2)?,
        num(s, 2..=2)?,
    )?;
    let offset = match zone {
        "UTC" | "GMT" | "Z" | "UT" => 0,
        z if z.len() == 5 && (z.starts_with('+') || z.starts_with('-')) => {
            let v = num(&z[1..3], 2..=2)? * 3600 + num(&z[3..], 2..=2)? * 60;
            if z.starts_with('-') {
                -v
            } else {
                v
            }
        }
        _ => return None,
    };
    Some(local - offset)
}

/// `2024-02-10T09:56:43Z`: how the lock records a Release date, and how messages show one.
pub fn format_date(secs: i64) -> String {
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let r = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        r / 3600,
        r / 60 % 60,
        r % 60
    )
}

/// [`format_date`]'s text back (the lock's `release-date`).
pub fn parse_lock_date(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() != 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'Z'
    {
        return None;
    }
    let n = |r: std::ops::Range<usize>| num(&text[r.clone()], r.len()..=r.len());
    seconds(
        n(0..4)?,
        n(5..7)?,
        n(8..10)?,
        n(11..13)?,
        n(14..16)?,
        n(17..19)?,
    )
}
