// Oracle for the Gemini CLI reader's tests: Gemini's own code (the installed
// @google/gemini-cli bundle) loads each file as `--resume` does and lists each chats
// folder as its session picker does. Usage:
//   node oracle.mjs <bundle dir> <file>...
// prints {files: {<file>: {record, history}}, listings: {<chats dir>: [session info]}}
// where record is loadConversationRecord's result without its messages (null when it
// cannot load the file) and history is convertSessionToClientHistory(messages),
// flattened to {id, role, parts} (what conversation.json holds).
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

const [bundle, ...files] = process.argv.slice(2);

// The chunks are named by build hashes: find them by what they define.
const chunks = readdirSync(bundle).filter((f) => f.startsWith("chunk-") && f.endsWith(".js")).sort();
const defining = (text) =>
	chunks.find((f) => readFileSync(join(bundle, f), "utf8").includes(text));
const core = await import(pathToFileURL(join(bundle, defining("async function loadConversationRecord("))).href);
const cli = await import(pathToFileURL(join(bundle, defining("var getSessionFiles = async"))).href);

const out = { files: {}, listings: {} };
for (const file of files) {
	let record = null;
	let history = null;
	try {
		const r = await core.loadConversationRecord(file);
		if (r) {
			record = { ...r, messages: undefined };
			history = core
				.convertSessionToClientHistory(r.messages)
				.map((h) => ({ id: h.id, role: h.content.role, parts: h.content.parts }));
		}
	} catch (e) {
		record = { error: String(e) };
	}
	out.files[file] = { record, history };
}
for (const dir of new Set(files.map((f) => dirname(f)))) {
	out.listings[dir] = await cli.getSessionFiles(dir);
}
process.stdout.write(JSON.stringify(out));
