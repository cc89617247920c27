//! `time.parse_rfc3339_ns` as OPA answers it: Go's `time.Parse` with the
//! RFC 3339 layout, observed through OPA's engine (tests).
//!
//! Why (issue 27): regorus' parser is laxer than Go's, so a timestamp OPA
//! refuses got a value (fail open): a space or a lower-case `t` for the
//! `T`, a lower-case `z`, a leap second `23:59:60`. Go reads exactly: a
//! 4-digit year, 2-digit month and day, `T`, an hour of one or two digits,
//! 2-digit minute and second, an optional fraction after `.` or `,` (at
//! least one digit, every digit read, those past the ninth dropped), then
//! `Z` or `±hh:mm` with an offset hour up to 24 and minute up to 60, and
//! nothing after. Fields out of range (day 31 of April, 29 February of a
//! year that is not leap, second 60) are errors, and so is an instant
//! outside the nanoseconds an int64 holds.

use regorus::Value;

use super::error;

const NAME: &str = "time.parse_rfc3339_ns";

/// `time.parse_rfc3339_ns(s)`; `None` for a non-string (regorus' type
/// error, as OPA's).
pub(super) fn parse_rfc3339_ns(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let Value::String(s) = &a[0] else {
        return None;
    };
    Some(match parse(s) {
        Ok(ns) => Ok(Value::from(ns)),
        Err(why) => error(NAME, format!("parsing time {s:?}: {why}"))?,
    })
}

/// Reads digits from the front of a text, Go's layout element by element.
struct Reader<'a> {
    rest: &'a [u8],
}

impl Reader<'_> {
    fn digits(&mut self, n: usize) -> Result<i64, String> {
        let head = self
            .rest
            .get(..n)
            .filter(|h| h.iter().all(u8::is_ascii_digit));
        let Some(head) = head else {
            return Err(format!("cannot parse {:?} as {n} digits", self.text()));
        };
        self.rest = &self.rest[n..];
        Ok(head.iter().fold(0, |v, d| v * 10 + i64::from(d - b'0')))
    }

    fn byte(&mut self, b: u8) -> Result<(), String> {
        match self.rest.split_first() {
            Some((&c, rest)) if c == b => {
                self.rest = rest;
                Ok(())
            }
            _ => Err(format!("cannot parse {:?} as {:?}", self.text(), b as char)),
        }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(self.rest).into_owned()
    }
}

/// Nanoseconds since the Unix epoch, or Go's reason for refusing `s`.
fn parse(s: &str) -> Result<i64, String> {
    let mut r = Reader { rest: s.as_bytes() };
    let year = r.digits(4)?;
    r.byte(b'-')?;
    let month = r.digits(2)?;
    r.byte(b'-')?;
    let day = r.digits(2)?;
    r.byte(b'T')?;
    // The hour alone may be one digit (Go's `15` element).
    let hour = match r.rest {
        [a, b, ..] if a.is_ascii_digit() && b.is_ascii_digit() => r.digits(2)?,
        _ => r.digits(1)?,
    };
    r.byte(b':')?;
    let minute = r.digits(2)?;
    r.byte(b':')?;
    let second = r.digits(2)?;
    let mut nanos = 0i64;
    if let [b'.' | b',', d, ..] = r.rest
        && d.is_ascii_digit()
    {
        r.rest = &r.rest[1..];
        let n = r.rest.iter().take_while(|b| b.is_ascii_digit()).count();
        for (i, d) in r.rest[..n].iter().enumerate().take(9) {
            nanos += i64::from(d - b'0') * 10i64.pow(8 - i as u32);
        }
        r.rest = &r.rest[n..];
    }
    let offset = match r.rest {
        [b'Z', ..] => {
            r.rest = &r.rest[1..];
            0
        }
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2, ..]
            if [h1, h2, m1, m2].iter().all(|b| b.is_ascii_digit()) =>
        {
            let hh = i64::from((h1 - b'0') * 10 + (h2 - b'0'));
            let mm = i64::from((m1 - b'0') * 10 + (m2 - b'0'));
            let sign = if *sign == b'-' { -1 } else { 1 };
            r.rest = &r.rest[6..];
            if !r.rest.is_empty() {
                return Err(format!("extra text: {:?}", r.text()));
            }
            if hh > 24 {
                return Err("time zone offset hour out of range".into());
            }
            if mm > 60 {
                return Err("time zone offset minute out of range".into());
            }
            sign * (hh * 3600 + mm * 60)
        }
        _ => return Err(format!("cannot parse {:?} as \"Z07:00\"", r.text())),
    };
    if !r.rest.is_empty() {
        return Err(format!("extra text: {:?}", r.text()));
    }
    if !(1..=12).contains(&month) {
        return Err("month out of range".into());
    }
    if day < 1 || day > days_in(year, month) {
        return Err("day out of range".into());
    }
    if hour > 23 {
        return Err("hour out of range".into());
    }
    if minute > 59 {
        return Err("minute out of range".into());
    }
    if second > 59 {
        return Err("second out of range".into());
    }
    let secs =
        days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset;
    i64::try_from(i128::from(secs) * 1_000_000_000 + i128::from(nanos))
        .map_err(|_| "time outside of valid range".into())
}

fn days_in(year: i64, month: i64) -> i64 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    // Years counted from March, so that February's length comes last.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_as_go() {
        // OPA's answers, from its own engine; `None` is an error.
        let cases: &[(&str, Option<i64>)] = &[
            ("2024-01-02T03:04:05Z", Some(1704164645000000000)),
            ("2024-01-02 03:04:05Z", None),
            ("2024-01-02t03:04:05z", None),
            ("2024-01-02T03:04:05z", None),
            ("2016-12-31T23:59:60Z", None),
            ("2024-01-02T03:04:05.123456789Z", Some(1704164645123456789)),
            ("2024-01-02T03:04:05.1234567891Z", Some(1704164645123456789)),
            ("2024-01-02T03:04:05.Z", None),
            ("2024-01-02T03:04:05,5Z", Some(1704164645500000000)),
            ("2024-01-02T03:04:05+24:00", Some(1704078245000000000)),
            ("2024-01-02T03:04:05+23:60", Some(1704078245000000000)),
            ("2024-01-02T03:04:05+24:60", Some(1704074645000000000)),
            ("2024-01-02T03:04:05+25:00", None),
            ("2024-01-02T03:04:05+00:61", None),
            ("2024-01-02T03:04:05-00:00", Some(1704164645000000000)),
            ("2024-01-02T03:04:05-23:59", Some(1704250985000000000)),
            ("2024-01-02T03:04:05+0100", None),
            ("2024-01-02T03:04:05+01", None),
            ("2024-01-02T03:04Z", None),
            ("2024-1-02T03:04:05Z", None),
            ("2024-01-2T03:04:05Z", None),
            ("2024-01-02T3:04:05Z", Some(1704164645000000000)),
            ("2024-01-02T003:04:05Z", None),
            ("2024-01-02T03:4:05Z", None),
            ("2024-01-02T03:04:5Z", None),
            ("2024-04-31T03:04:05Z", None),
            ("2024-02-29T03:04:05Z", Some(1709175845000000000)),
            ("2023-02-29T03:04:05Z", None),
            ("1900-02-29T03:04:05Z", None),
            ("2000-02-29T03:04:05Z", Some(951793445000000000)),
            ("2024-13-01T03:04:05Z", None),
            ("2024-01-00T03:04:05Z", None),
            ("2024-01-02T24:00:00Z", None),
            ("2024-01-02T03:60:00Z", None),
            ("0000-01-01T00:00:00Z", None),
            ("1677-09-21T00:12:43.145224191Z", None),
            ("1677-09-21T00:12:43.145224192Z", Some(i64::MIN)),
            ("2262-04-11T23:47:16.854775807Z", Some(i64::MAX)),
            ("2262-04-11T23:47:16.854775808Z", None),
            (" 2024-01-02T03:04:05Z", None),
            ("2024-01-02T03:04:05Z ", None),
            ("+2024-01-02T03:04:05Z", None),
            ("2024-01-02T03:04:05.5+01:30", Some(1704159245500000000)),
            ("2024-01-02T03:04:05+01:00:00", None),
            ("2024-01-02T03:04:05.5,5Z", None),
            (
                "2024-01-02T03:04:05.00000000000000000001Z",
                Some(1704164645000000000),
            ),
            ("1969-12-31T23:59:59.999999999Z", Some(-1)),
            ("", None),
        ];
        for (s, want) in cases {
            assert_eq!(parse(s).ok(), *want, "{s}");
        }
    }
}
