//! Entry ids: UUIDv7, strictly increasing within a session even when the clock steps
//! back or another process wrote the previous entry.

use uuid::Uuid;

/// A UUIDv7 greater than `last` (when `last` is a UUID), or `None` when `last` is the
/// largest UUIDv7 there is. When the clock would give a smaller or equal one, the 74
/// random bits of `last` are used as a counter and incremented (RFC 9562 §6.2
/// method 2), carrying into the timestamp on overflow.
pub fn checked_next_entry_id(last: Option<&str>) -> Option<Uuid> {
    let last = last.and_then(|s| Uuid::parse_str(s).ok());
    if let Some(last) = last {
        // Same millisecond (or a clock behind the last id): count on from it, which
        // also spares a getrandom(2) per append in a burst.
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        if (last.as_u128() >> 80) >= now_ms {
            return increment(last);
        }
    }
    let fresh = Uuid::now_v7();
    match last {
        Some(last) if fresh <= last => increment(last),
        _ => Some(fresh),
    }
}

/// As `checked_next_entry_id`; panics when the UUIDv7 space is exhausted.
pub fn next_entry_id(last: Option<&str>) -> Uuid {
    checked_next_entry_id(last).expect("no UUIDv7 is greater than the last id")
}

/// The error for a session whose last id is the largest UUIDv7: nothing can follow.
pub fn exhausted(last: &str) -> crate::error::Error {
    crate::error::Error::new(
        libc::EOVERFLOW,
        format!("no entry id can follow {last}: it is the largest UUIDv7"),
    )
}

/// `last` + 1 in its 74 random bits, carrying into the timestamp on overflow; `None`
/// past the largest UUIDv7 (a foreign id, year 10889).
fn increment(last: Uuid) -> Option<Uuid> {
    let v = last.as_u128();
    let ts = v >> 80;
    let rand_a = (v >> 64) & 0xfff;
    let rand_b = v & ((1u128 << 62) - 1);
    let counter = (rand_a << 62) | rand_b;
    let (ts, counter) = if counter + 1 < (1u128 << 74) {
        (ts, counter + 1)
    } else if ts + 1 < (1u128 << 48) {
        (ts + 1, 0)
    } else {
        return None;
    };
    let rand_a = counter >> 62;
    let rand_b = counter & ((1u128 << 62) - 1);
    Some(Uuid::from_u128(
        (ts << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b,
    ))
}

/// A 128-bit key for an entry id: the UUID itself, or a hash of a foreign id string.
/// Used to find `first-kept-entry-id` targets without keeping id strings in memory.
pub fn id_key(id: &str) -> u128 {
    if let Ok(u) = Uuid::parse_str(id) {
        return u.as_u128();
    }
    // FNV-1a, 128-bit: stable across runs (the persisted cache may hold these keys).
    let mut h: u128 = 0x6c62272e07bb014262b821756295c58d;
    for b in id.bytes() {
        h ^= b as u128;
        h = h.wrapping_mul(0x0000000001000000000000000000013B);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_increase_even_when_last_is_in_the_future() {
        let future = "7fffffff-ffff-7fff-bfff-fffffffffffe";
        let a = next_entry_id(Some(future));
        assert!(a > Uuid::parse_str(future).unwrap());
        assert_eq!(a.get_version_num(), 7);
        let b = next_entry_id(Some(&a.to_string()));
        assert!(b > a);
        let c = next_entry_id(Some(&b.to_string()));
        assert!(c > b, "carry into timestamp keeps order");
    }

    #[test]
    fn the_top_of_the_space_is_exhausted_not_repeated() {
        let max = "ffffffff-ffff-7fff-bfff-ffffffffffff";
        assert_eq!(checked_next_entry_id(Some(max)), None);
        let below = "ffffffff-ffff-7fff-bfff-fffffffffffe";
        let next = checked_next_entry_id(Some(below)).unwrap();
        assert_eq!(next.to_string(), max);
    }

    #[test]
    fn ids_are_v7_and_fresh_ones_are_used_when_larger() {
        let a = next_entry_id(None);
        let b = next_entry_id(Some(&a.to_string()));
        assert!(b > a);
        assert_eq!(b.get_version_num(), 7);
        assert_eq!(id_key(&a.to_string()), a.as_u128());
        assert_ne!(id_key("foreign-1"), id_key("foreign-2"));
    }
}
