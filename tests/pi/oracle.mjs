// Oracle for tests/source_pi.rs: pi's own SessionManager writes sessions and says
// what it resumes and lists. Usage (PI_DIR = folder where scripts/install-pi put pi):
//   node oracle.mjs write <sessionDir> <cwd>   writes every scenario, prints {name: file}
//   node oracle.mjs context <file>             prints buildSessionContext().messages of a COPY
//   node oracle.mjs contexts <file>...         the same for each file, as {file: result}
//   node oracle.mjs list <sessionDir>          prints SessionManager.list() facts
// The caller sets HOME and PI_CODING_AGENT_DIR to temp folders.
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const piDir = process.env.PI_DIR;
const pkg = join(piDir, "node_modules/@mariozechner/pi-coding-agent/dist/index.js");
const { SessionManager } = await import(pathToFileURL(pkg).href);
// Not re-exported by the index; open() starts a new session when it finds no entries.
const { loadEntriesFromFile } = await import(
	pathToFileURL(join(piDir, "node_modules/@mariozechner/pi-coding-agent/dist/core/session-manager.js")).href
);

let clock = Date.parse("2026-01-02T03:04:05.000Z");
const ts = () => (clock += 1000);
const user = (text) => ({ role: "user", content: text, timestamp: ts() });
const userBlocks = (...texts) => ({
	role: "user",
	content: texts.map((text) => ({ type: "text", text })),
	timestamp: ts(),
});
const assistant = (text, extra = []) => ({
	role: "assistant",
	content: [{ type: "thinking", thinking: "hmm" }, { type: "text", text }, ...extra],
	api: "anthropic-messages",
	provider: "anthropic",
	model: "claude-x",
	usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { total: 0.001 } },
	stopReason: "stop",
	timestamp: ts(),
});
const toolCall = { type: "toolCall", id: "call_1", name: "bash", arguments: { command: "ls" } };
const toolResult = () => ({
	role: "toolResult",
	toolCallId: "call_1",
	toolName: "bash",
	content: [{ type: "text", text: "a\nb" }],
	isError: false,
	timestamp: ts(),
});

// Each scenario gets its own SessionManager (one file) in the same folder.
const scenarios = {
	linear(sm) {
		sm.appendModelChange("anthropic", "claude-x");
		sm.appendThinkingLevelChange("high");
		sm.appendMessage(user("  hello\tthere\nsecond line  "));
		sm.appendMessage(assistant("hi", [toolCall]));
		sm.appendMessage(toolResult());
		sm.appendMessage(assistant("done ✓ ünïcode"));
		sm.appendMessage(userBlocks("more", "blocks"));
		sm.appendMessage(assistant("ok"));
	},
	branches(sm) {
		sm.appendMessage(user("first"));
		const a1 = sm.appendMessage(assistant("a1"));
		sm.appendMessage(user("second, abandoned"));
		sm.appendMessage(assistant("a2"));
		sm.branch(a1);
		sm.appendMessage(user("second, retried"));
		sm.appendMessage(assistant("a2 again"));
		sm.appendLabelChange(a1, "bookmark");
	},
	compaction(sm) {
		sm.appendMessage(user("one"));
		sm.appendMessage(assistant("r1"));
		const keep = sm.appendMessage(user("two"));
		sm.appendMessage(assistant("r2"));
		sm.appendCompaction("summary of one", keep, 1234, { readFiles: ["a"] });
		sm.appendMessage(user("three"));
		sm.appendMessage(assistant("r3"));
		sm.appendCompaction("summary again", "nope0000", 99);
		sm.appendMessage(user("four"));
		sm.appendMessage(assistant("r4"));
	},
	compactionOffPath(sm) {
		sm.appendMessage(user("root"));
		const a = sm.appendMessage(assistant("ra"));
		const off = sm.appendMessage(user("off path"));
		sm.appendMessage(assistant("rb"));
		sm.branch(a);
		sm.appendMessage(user("on path"));
		sm.appendMessage(assistant("rc"));
		sm.appendCompaction("summary", off, 50, undefined, true);
		sm.appendMessage(user("after"));
		sm.appendMessage(assistant("rd"));
	},
	branchSummary(sm) {
		sm.appendMessage(user("start"));
		const a = sm.appendMessage(assistant("r"));
		sm.appendMessage(user("explore"));
		sm.appendMessage(assistant("explored"));
		sm.branchWithSummary(a, "we explored X", { files: 2 });
		sm.appendMessage(user("continue"));
		sm.appendMessage(assistant("r2"));
		sm.branchWithSummary(a, "");
		sm.appendMessage(user("again"));
		sm.appendMessage(assistant("r3"));
	},
	branchFromRoot(sm) {
		sm.appendMessage(user("old root"));
		sm.appendMessage(assistant("r"));
		sm.branchWithSummary(null, "restarted");
		sm.appendMessage(user("new root"));
		sm.appendMessage(assistant("r2"));
	},
	custom(sm) {
		sm.appendMessage(user("c"));
		sm.appendMessage(assistant("r"));
		sm.appendCustomMessageEntry("ext-a", "shown text", true, { a: 1 });
		sm.appendCustomMessageEntry("ext-b", [{ type: "text", text: "hidden" }], false);
		sm.appendCustomEntry("ext-state", { x: [1, 2] });
		sm.appendMessage({ role: "bashExecution", command: "ls", output: "x", exitCode: 0, cancelled: false, truncated: false, timestamp: ts() });
		sm.appendMessage(assistant("r2"));
	},
	renamed(sm) {
		sm.appendMessage(user("named"));
		sm.appendMessage(assistant("r"));
		sm.appendSessionInfo("First name");
		sm.appendSessionInfo("  Second name  ");
	},
	renameCleared(sm) {
		sm.appendMessage(userBlocks("", "blocks only"));
		sm.appendMessage(assistant("r"));
		sm.appendSessionInfo("A name");
		sm.appendSessionInfo("   ");
	},
	noUser(sm) {
		sm.appendMessage(assistant("only assistant"));
	},
	compactedThenBranched(sm) {
		sm.appendMessage(user("u1"));
		const a1 = sm.appendMessage(assistant("a1"));
		const u2 = sm.appendMessage(user("u2"));
		sm.appendMessage(assistant("a2"));
		sm.appendCompaction("sum", u2, 10);
		sm.appendMessage(user("u3"));
		sm.branch(a1);
		sm.appendMessage(user("u2b"));
		sm.appendMessage(assistant("a2b"));
	},
};

// Lone surrogates (JSON.parse keeps them) printed as U+FFFD, so Rust can parse the output.
const print = (v) =>
	console.log(JSON.stringify(v, (_k, x) => (typeof x === "string" ? x.toWellFormed() : x)));

// open() may rewrite the file (migration, bad header): work on a copy.
function context(file) {
	const dir = mkdtempSync(join(tmpdir(), "pi-oracle-"));
	const copy = join(dir, "copy.jsonl");
	copyFileSync(file, copy);
	try {
		const startedOver = loadEntriesFromFile(copy).length === 0;
		const sm = SessionManager.open(copy, dir);
		return { ok: true, startedOver, messages: sm.buildSessionContext().messages };
	} catch (e) {
		return { ok: false, error: String(e) };
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
}

const [cmd, arg1, arg2] = process.argv.slice(2);
if (cmd === "write") {
	const out = {};
	for (const [name, fill] of Object.entries(scenarios)) {
		const sm = SessionManager.create(arg2, arg1);
		fill(sm);
		out[name] = sm.getSessionFile();
	}
	print(out);
} else if (cmd === "context") {
	print(context(arg1));
} else if (cmd === "contexts") {
	const out = {};
	for (const file of process.argv.slice(3)) out[file] = context(file);
	print(out);
} else if (cmd === "list") {
	const iso = (d) => (d instanceof Date && !Number.isNaN(d.getTime()) ? d.toISOString() : null);
	const sessions = await SessionManager.list("/unused", arg1);
	print(
			sessions.map((s) => ({
				path: s.path,
				id: s.id,
				cwd: s.cwd,
				name: s.name ?? null,
				created: iso(s.created),
				modified: iso(s.modified),
				messageCount: s.messageCount,
				firstMessage: s.firstMessage,
			})),
	);
} else {
	console.error(`unknown command ${cmd}`);
	process.exit(2);
}
