//! VS Code's chat session operation log (`chatSessions/<id>.jsonl`), replayed as VS
//! Code's `ObjectMutationLog.read` does (microsoft/vscode
//! ce1580aa66c166f369325f5dcaa55db7701cf6cc,
//! `src/vs/workbench/contrib/chat/common/model/objectMutationLog.ts`): one JSON entry a
//! line, `{"kind": 0, "v": state}` the whole session, then `1` set `v` at path `k`,
//! `2` push the items `v` onto the array at `k` (truncated to `i` first when given),
//! `3` delete at `k`. VS Code appends entries, and rewrites the file from a fresh
//! `kind: 0` after enough of them: a replay goes on from where it stopped while the
//! file is the one it read and only grew, and starts over otherwise.

use serde::Deserialize;
use serde_json::{Map, Value};

#[derive(Deserialize)]
struct Entry {
    kind: u8,
    #[serde(default)]
    k: Vec<Value>,
    #[serde(default)]
    v: Option<Value>,
    #[serde(default)]
    i: Option<u64>,
}

/// A replay in progress.
#[derive(Debug, Clone, Default)]
pub struct Replay {
    pub state: Option<Value>,
    /// Entries applied.
    pub entries: u64,
    /// Why VS Code could not load the log (it throws on the first bad entry): the
    /// replay stops there.
    pub error: Option<String>,
}

fn step<'a>(v: &'a mut Value, key: &Value) -> Option<&'a mut Value> {
    match (v, key) {
        (Value::Object(m), Value::String(k)) => m.get_mut(k),
        (Value::Object(m), Value::Number(n)) => m.get_mut(&n.to_string()),
        (Value::Array(a), Value::Number(n)) => a.get_mut(n.as_u64()? as usize),
        (Value::Array(a), Value::String(s)) => a.get_mut(s.parse::<usize>().ok()?),
        _ => None,
    }
}

/// `current[key] = value` (`None`: JavaScript's `undefined`, a deleted property).
fn assign(parent: &mut Value, key: &Value, value: Option<Value>) -> Result<(), String> {
    match parent {
        Value::Object(m) => {
            let k = match key {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            match value {
                Some(v) => {
                    m.insert(k, v);
                }
                None => {
                    m.remove(&k);
                }
            }
            Ok(())
        }
        Value::Array(a) => {
            let i = match key {
                Value::Number(n) => n.as_u64().map(|n| n as usize),
                Value::String(s) => s.parse::<usize>().ok(),
                _ => None,
            }
            .ok_or_else(|| format!("{key} is not an index"))?;
            if i >= a.len() {
                a.resize(i + 1, Value::Null);
            }
            a[i] = value.unwrap_or(Value::Null);
            Ok(())
        }
        _ => Err("a path through a value that is not an object or array".into()),
    }
}

impl Replay {
    /// Applies one complete line (`Err`: VS Code's `read` throws on it).
    pub fn apply(&mut self, line: &[u8]) {
        if self.error.is_some() || line.is_empty() {
            return;
        }
        if let Err(why) = self.apply_entry(line) {
            self.error = Some(format!("entry {}: {why}", self.entries + 1));
        } else {
            self.entries += 1;
        }
    }

    fn apply_entry(&mut self, line: &[u8]) -> Result<(), String> {
        let e: Entry = serde_json::from_slice(line).map_err(|e| e.to_string())?;
        if e.kind == 0 {
            self.state = Some(e.v.unwrap_or(Value::Null));
            return Ok(());
        }
        let state = self
            .state
            .as_mut()
            .ok_or_else(|| "a change before the initial state".to_string())?;
        if e.k.is_empty() {
            // VS Code ignores a change of the root.
            return Ok(());
        }
        let (last, path) = e.k.split_last().unwrap();
        let mut parent = state;
        for key in path {
            parent = step(parent, key).ok_or_else(|| format!("no value at {key}"))?;
        }
        match e.kind {
            1 => assign(parent, last, Some(e.v.unwrap_or(Value::Null))),
            3 => assign(parent, last, None),
            2 => {
                let mut array = match step(parent, last) {
                    Some(Value::Array(a)) => std::mem::take(a),
                    _ => Vec::new(),
                };
                if let Some(i) = e.i {
                    array.truncate(i as usize);
                }
                if let Some(Value::Array(items)) = e.v {
                    array.extend(items);
                }
                assign(parent, last, Some(Value::Array(array)))
            }
            k => Err(format!("unknown entry kind {k}")),
        }
    }
}

/// A session's top-level fields (key, JSON text), `requests` aside.
pub type Fields = Vec<(String, String)>;

/// The state's top-level fields (but `requests`) and its requests.
pub fn split(state: &Value) -> (Fields, Vec<Map<String, Value>>) {
    let mut fields = Vec::new();
    let mut requests = Vec::new();
    if let Value::Object(m) = state {
        for (k, v) in m {
            if k == "requests" {
                if let Value::Array(items) = v {
                    requests = items
                        .iter()
                        .filter_map(|r| r.as_object().cloned())
                        .collect();
                }
                continue;
            }
            fields.push((k.clone(), v.to_string()));
        }
    }
    (fields, requests)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn entries_replay_as_vs_code_reads_them() {
        let mut r = Replay::default();
        for line in [
            json!({"kind": 0, "v": {"sessionId": "s", "requests": []}}),
            json!({"kind": 2, "k": ["requests"], "v": [{"requestId": "a", "response": []}]}),
            json!({"kind": 2, "k": ["requests", 0, "response"], "v": [{"value": "hi"}]}),
            json!({"kind": 1, "k": ["requests", 0, "result"], "v": {"metadata": {"promptTokens": 9}}}),
            json!({"kind": 1, "k": ["customTitle"], "v": "T"}),
            json!({"kind": 2, "k": ["requests"], "v": [{"requestId": "b"}, {"requestId": "c"}]}),
            json!({"kind": 2, "k": ["requests"], "i": 2}),
            json!({"kind": 3, "k": ["customTitle"]}),
        ] {
            r.apply(line.to_string().as_bytes());
        }
        assert_eq!(r.error, None);
        let s = r.state.unwrap();
        assert_eq!(s["requests"].as_array().unwrap().len(), 2);
        assert_eq!(s["requests"][0]["response"][0]["value"], "hi");
        assert_eq!(s["requests"][0]["result"]["metadata"]["promptTokens"], 9);
        assert!(s.get("customTitle").is_none());
        let mut bad = Replay::default();
        bad.apply(b"{\"kind\": 1, \"k\": [\"x\"], \"v\": 1}");
        assert!(bad.error.unwrap().contains("before the initial state"));
    }
}
