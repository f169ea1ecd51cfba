//! A small HTTP server on 127.0.0.1 standing in for a model API, for tests that run
//! the real agents: it records every request (method, path, headers, body) and
//! answers each with one assistant message in the API's own streaming format. What a
//! test reads back is what the agent sent: the conversation it resumed with.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// Path and query, as sent.
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Response {
    pub fn json(v: &serde_json::Value) -> Response {
        Response {
            status: 200,
            content_type: "application/json",
            body: serde_json::to_vec(v).unwrap(),
        }
    }

    /// Server-sent events: `(event name or "", data)` pairs.
    pub fn sse(events: &[(&str, serde_json::Value)]) -> Response {
        let mut body = String::new();
        for (name, data) in events {
            if !name.is_empty() {
                body.push_str(&format!("event: {name}\n"));
            }
            body.push_str(&format!("data: {data}\n\n"));
        }
        Response {
            status: 200,
            content_type: "text/event-stream",
            body: body.into_bytes(),
        }
    }

    pub fn not_found() -> Response {
        Response {
            status: 404,
            content_type: "application/json",
            body: br#"{"error":{"message":"not found"}}"#.to_vec(),
        }
    }
}

type Handler = dyn Fn(&Request) -> Response + Send + Sync;

pub struct MockModel {
    pub port: u16,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl MockModel {
    /// Serves `handler` on a free port of 127.0.0.1 until the test process ends.
    pub fn start(handler: impl Fn(&Request) -> Response + Send + Sync + 'static) -> MockModel {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let recorded = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (recorded, handler) = (recorded.clone(), handler.clone());
                std::thread::spawn(move || serve(stream, &recorded, handler.as_ref()));
            }
        });
        MockModel { port, requests }
    }

    /// Answers every API this file knows, each with `reply` as the assistant's text.
    pub fn any_api(reply: &str) -> MockModel {
        let reply = reply.to_string();
        Self::start(move |req| respond_any(req, &reply))
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// The JSON bodies of the requests whose path contains `path_part`.
    pub fn bodies(&self, path_part: &str) -> Vec<serde_json::Value> {
        self.requests()
            .iter()
            .filter(|r| r.path.contains(path_part))
            .filter_map(Request::json)
            .collect()
    }
}

fn serve(stream: TcpStream, recorded: &Mutex<Vec<Request>>, handler: &Handler) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
    let mut out = stream;
    loop {
        let Some(req) = read_request(&mut reader) else {
            return;
        };
        recorded.lock().unwrap().push(req.clone());
        let resp = handler(&req);
        let reason = if resp.status == 200 { "OK" } else { "Error" };
        let head = format!(
            "HTTP/1.1 {} {reason}\r\ncontent-type: {}\r\ncontent-length: {}\r\ncache-control: no-cache\r\n\r\n",
            resp.status,
            resp.content_type,
            resp.body.len()
        );
        if out.write_all(head.as_bytes()).is_err() || out.write_all(&resp.body).is_err() {
            return;
        }
        let _ = out.flush();
    }
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let get = |name: &str| {
        headers
            .iter()
            .find(|(k, _): &&(String, String)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let mut body = Vec::new();
    if let Some(len) = get("content-length").and_then(|v| v.parse::<usize>().ok()) {
        body.resize(len, 0);
        reader.read_exact(&mut body).ok()?;
    } else if get("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let n = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            let mut chunk = vec![0; n + 2];
            reader.read_exact(&mut chunk).ok()?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    }
    // A compressed body (some clients gzip requests) is kept as is; tests that meet
    // one decompress it themselves.
    Some(Request {
        method,
        path,
        headers,
        body,
    })
}

/// One reply for whichever API the request is for, by its path.
pub fn respond_any(req: &Request, reply: &str) -> Response {
    let stream = req
        .json()
        .and_then(|v| v.get("stream").and_then(|s| s.as_bool()))
        .unwrap_or(false);
    if req.method != "POST" {
        return Response::not_found();
    }
    if req.path.contains("/messages") && !req.path.contains("count_tokens") {
        anthropic_message(reply, stream)
    } else if req.path.contains("count_tokens") {
        Response::json(&serde_json::json!({"input_tokens": 10}))
    } else if req.path.contains("/responses") {
        openai_response(reply)
    } else if req.path.contains("/chat/completions") {
        openai_chat(reply, stream)
    } else if req.path.contains(":streamGenerateContent") {
        gemini_text(reply, true)
    } else if req.path.contains(":generateContent") {
        gemini_text(reply, false)
    } else if req.path.contains(":countTokens") {
        Response::json(&serde_json::json!({"totalTokens": 10}))
    } else {
        Response::not_found()
    }
}

/// Anthropic Messages API (`POST /v1/messages`), streamed when asked.
pub fn anthropic_message(reply: &str, stream: bool) -> Response {
    use serde_json::json;
    let usage = json!({"input_tokens": 10, "output_tokens": 5});
    if !stream {
        return Response::json(&json!({
            "id": "msg_mock", "type": "message", "role": "assistant", "model": "claude-mock",
            "content": [{"type": "text", "text": reply}],
            "stop_reason": "end_turn", "stop_sequence": null, "usage": usage,
        }));
    }
    Response::sse(&[
        (
            "message_start",
            json!({"type": "message_start", "message": {
                "id": "msg_mock", "type": "message", "role": "assistant", "model": "claude-mock",
                "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
                   "content_block": {"type": "text", "text": ""}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "text_delta", "text": reply}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta",
                   "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                   "usage": {"output_tokens": 5}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ])
}

/// Anthropic Messages API with any content blocks (`text`, `tool_use`): message `id`,
/// `stop_reason` (`end_turn`, `tool_use`), streamed when asked (a tool call's input
/// as one `input_json_delta`).
pub fn anthropic_blocks(
    id: &str,
    blocks: &[serde_json::Value],
    stop_reason: &str,
    stream: bool,
) -> Response {
    use serde_json::json;
    let usage = json!({"input_tokens": 10, "output_tokens": 5});
    if !stream {
        return Response::json(&json!({
            "id": id, "type": "message", "role": "assistant", "model": "claude-mock",
            "content": blocks, "stop_reason": stop_reason, "stop_sequence": null, "usage": usage,
        }));
    }
    let mut events = vec![(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "model": "claude-mock",
            "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage}}),
    )];
    for (i, b) in blocks.iter().enumerate() {
        if b["type"] == "tool_use" {
            let start = json!({"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}});
            events.push((
                "content_block_start",
                json!({"type": "content_block_start", "index": i, "content_block": start}),
            ));
            events.push((
                "content_block_delta",
                json!({"type": "content_block_delta", "index": i, "delta":
                       {"type": "input_json_delta", "partial_json": b["input"].to_string()}}),
            ));
        } else {
            events.push((
                "content_block_start",
                json!({"type": "content_block_start", "index": i,
                       "content_block": {"type": "text", "text": ""}}),
            ));
            events.push((
                "content_block_delta",
                json!({"type": "content_block_delta", "index": i,
                       "delta": {"type": "text_delta", "text": b["text"]}}),
            ));
        }
        events.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": i}),
        ));
    }
    events.push((
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
               "usage": {"output_tokens": 5}}),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    Response::sse(&events)
}

/// OpenAI Responses API (`POST /v1/responses`), always streamed (Codex streams).
pub fn openai_response(reply: &str) -> Response {
    use serde_json::json;
    let item = json!({"type": "message", "id": "msg_mock", "status": "completed",
                      "role": "assistant",
                      "content": [{"type": "output_text", "text": reply, "annotations": []}]});
    let usage = json!({"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                       "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
                       "total_tokens": 15});
    Response::sse(&[
        (
            "response.created",
            json!({"type": "response.created", "response": {
                "id": "resp_mock", "object": "response", "status": "in_progress",
                "model": "mock", "output": []}}),
        ),
        (
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": 0,
                   "item": {"type": "message", "id": "msg_mock", "status": "in_progress",
                            "role": "assistant", "content": []}}),
        ),
        (
            "response.output_text.delta",
            json!({"type": "response.output_text.delta", "item_id": "msg_mock",
                   "output_index": 0, "content_index": 0, "delta": reply}),
        ),
        (
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        ),
        (
            "response.completed",
            json!({"type": "response.completed", "response": {
                "id": "resp_mock", "object": "response", "status": "completed",
                "model": "mock", "output": [item], "usage": usage}}),
        ),
    ])
}

/// OpenAI Chat Completions (`POST /v1/chat/completions`), streamed when asked.
pub fn openai_chat(reply: &str, stream: bool) -> Response {
    openai_chat_reply(
        Some(reply),
        &[],
        serde_json::json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}),
        stream,
    )
}

/// One tool call of a Chat Completions answer: its id, the function's name and its
/// arguments (sent as the JSON text of this value, as the API does).
pub struct ChatToolCall<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub arguments: serde_json::Value,
}

/// Whether the request is a Chat Completions request.
pub fn is_openai_chat(req: &Request) -> bool {
    req.method == "POST" && req.path.contains("/chat/completions")
}

/// OpenAI Chat Completions answering with `text` and/or `tool_calls`, with `usage`
/// (`prompt_tokens`, `completion_tokens`, ...): one JSON body, or when `stream` the
/// server-sent chunks an OpenAI-compatible server sends (the role, the text, each
/// call's id and name then its arguments, the finish reason, the usage chunk when
/// `stream_options.include_usage` asks for it, which fen-fs's mock always sends,
/// then `[DONE]`).
pub fn openai_chat_reply(
    text: Option<&str>,
    tool_calls: &[ChatToolCall],
    usage: serde_json::Value,
    stream: bool,
) -> Response {
    use serde_json::json;
    let finish = if tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    let calls: Vec<serde_json::Value> = tool_calls
        .iter()
        .map(|c| {
            json!({"id": c.id, "type": "function",
                   "function": {"name": c.name, "arguments": c.arguments.to_string()}})
        })
        .collect();
    if !stream {
        let mut message = json!({"role": "assistant", "content": text});
        if !calls.is_empty() {
            message["tool_calls"] = json!(calls);
        }
        return Response::json(&json!({
            "id": "chatcmpl-mock", "object": "chat.completion", "created": 0, "model": "mock",
            "choices": [{"index": 0, "finish_reason": finish, "message": message}],
            "usage": usage}));
    }
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
        json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0,
               "model": "mock", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut events = vec![(
        "",
        chunk(json!({"role": "assistant", "content": ""}), json!(null)),
    )];
    if let Some(text) = text {
        events.push(("", chunk(json!({"content": text}), json!(null))));
    }
    for (i, c) in tool_calls.iter().enumerate() {
        events.push((
            "",
            chunk(
                json!({"tool_calls": [{"index": i, "id": c.id, "type": "function",
                                        "function": {"name": c.name, "arguments": ""}}]}),
                json!(null),
            ),
        ));
        events.push((
            "",
            chunk(
                json!({"tool_calls": [{"index": i,
                                        "function": {"arguments": c.arguments.to_string()}}]}),
                json!(null),
            ),
        ));
    }
    events.push(("", chunk(json!({}), json!(finish))));
    events.push((
        "",
        json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0,
               "model": "mock", "choices": [], "usage": usage}),
    ));
    let mut resp = Response::sse(&events);
    resp.body.extend_from_slice(b"data: [DONE]\n\n");
    resp
}

/// Gemini API (`POST /v1beta/models/<model>:generateContent`, or
/// `:streamGenerateContent?alt=sse`) answering with `text`.
pub fn gemini_text(text: &str, stream: bool) -> Response {
    gemini_parts(serde_json::json!([{"text": text}]), stream)
}

/// Gemini API answering with these `parts` (text, `functionCall`...), in one chunk.
pub fn gemini_parts(parts: serde_json::Value, stream: bool) -> Response {
    let body = serde_json::json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "gemini-mock"
    });
    if stream {
        Response::sse(&[("", body)])
    } else {
        Response::json(&body)
    }
}

/// Whether the streamed request's path is the Gemini API's.
pub fn is_gemini(req: &Request) -> bool {
    req.path.contains(":streamGenerateContent") || req.path.contains(":generateContent")
}
