//! Just enough of the protobuf wire format to read a message's fields without its
//! schema: the index nodes of Cursor's `store.db` (top-level fields), Warp's agent
//! tasks (decoded by field number against Warp's published `.proto`).

/// One top-level field's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    Bytes(Vec<u8>),
}

fn varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// The top-level `(field number, value)` pairs of a message, in order; `None` when the
/// bytes are not a well-formed message (a JSON blob, say).
pub fn fields(b: &[u8]) -> Option<Vec<(u64, Value)>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < b.len() {
        let tag = varint(b, &mut at)?;
        let (field, wire) = (tag >> 3, tag & 7);
        if field == 0 {
            return None;
        }
        let value = match wire {
            0 => Value::Varint(varint(b, &mut at)?),
            1 => {
                let v = u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?);
                at += 8;
                Value::Fixed64(v)
            }
            2 => {
                let len = usize::try_from(varint(b, &mut at)?).ok()?;
                let v = b.get(at..at.checked_add(len)?)?.to_vec();
                at += len;
                Value::Bytes(v)
            }
            5 => {
                let v = u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?);
                at += 4;
                Value::Fixed32(v)
            }
            _ => return None,
        };
        out.push((field, value));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fields_and_refuses_what_is_not_a_message() {
        // field 1 (bytes "ab"), field 2 (varint 300), field 9 (string "w").
        let b = [0x0a, 2, b'a', b'b', 0x10, 0xac, 0x02, 0x4a, 1, b'w'];
        assert_eq!(
            fields(&b).unwrap(),
            vec![
                (1, Value::Bytes(b"ab".to_vec())),
                (2, Value::Varint(300)),
                (9, Value::Bytes(b"w".to_vec()))
            ]
        );
        assert_eq!(fields(b"{\"role\":\"user\"}"), None);
        assert_eq!(fields(&[0x0a, 5, 1]), None, "a length past the end");
    }
}
