// Oracle for the Qwen Code reader's tests: Qwen's own code (the installed
// @qwen-code/qwen-code bundle) lists a project's sessions as its picker does and loads
// each as `--resume ID` does. Usage (QWEN_RUNTIME_DIR set to the store's root):
//   node oracle.mjs <bundle dir> <cwd>
// prints {active: [item], archived: [item], loaded: {<id>: {history} | {error}}}
// where history is buildSessionHistoryFromConversation's apiHistory (what
// conversation.json holds) of loadSession's conversation (null when it loads nothing).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [bundle, cwd] = process.argv.slice(2);
const chunks = join(bundle, "chunks");
// The chunks are named by build hashes: find them by what they define.
const defining = (text) =>
	readdirSync(chunks)
		.filter((f) => f.startsWith("chunk-") && f.endsWith(".js"))
		.sort()
		.find((f) => readFileSync(join(chunks, f), "utf8").includes(text));
const core = await import(
	pathToFileURL(join(chunks, defining("function buildSessionHistoryFromConversation("))).href
);
const service = new core.SessionService(cwd);
const out = { active: [], archived: [], loaded: {} };
for (const archiveState of ["active", "archived"]) {
	const list = await service.listSessions({ size: 1000, archiveState });
	out[archiveState] = list.items.map((i) => ({
		sessionId: i.sessionId,
		cwd: i.cwd,
		startTime: i.startTime,
		prompt: i.prompt,
		customTitle: i.customTitle,
		file: i.filePath,
	}));
}
for (const item of out.active) {
	try {
		const r = await service.loadSession(item.sessionId);
		out.loaded[item.sessionId] = {
			history: r ? core.buildSessionHistoryFromConversation(r.conversation).apiHistory : null,
		};
	} catch (e) {
		out.loaded[item.sessionId] = { error: String(e) };
	}
}
process.stdout.write(JSON.stringify(out));
