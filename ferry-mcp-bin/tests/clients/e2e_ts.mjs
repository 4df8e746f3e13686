// The whole fleet flow through @modelcontextprotocol/sdk (TypeScript SDK 1.x): each agent a
// Client over stdio (initialize 2025-11-25), and the human's steps through the `ferry` CLI.
// usage: FERRY_HOME=<state folder> node e2e_ts.mjs <ferry binary> <project>   (the file must
// sit beside the node_modules that hold the SDK, as ts_client.mjs)
// The project must be set up as tests/it/e2e.rs (`fleet`) does: agents lead (orchestrator,
// primary, with a brief), dev (member) and ops2 (orchestrator); orders "Write the parser"
// (--review) and "Update the docs".
// callTool validates every structuredContent against the outputSchema that listTools cached
// (it throws on a mismatch); the script checks first that it does. Prints each call; exits
// non-zero on the first failed check.
import { execFileSync } from "node:child_process";
import { isDeepStrictEqual } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [FERRY, PROJECT] = process.argv.slice(2);
const TOOLS = ["ferry_ask_human", "ferry_catchup", "ferry_join", "ferry_orders", "ferry_primary", "ferry_talk"];
const PARSER_TITLE = "Write the parser";
const DOCS_TITLE = "Update the docs";
const OBJECTIVE = "Ship the parser this week";
const SILENCE_TIMEOUT_MS = 60_000;

function check(condition, what) {
  if (!condition) {
    console.error("FAILED:", what);
    process.exit(1);
  }
  console.log("ok:", what);
}

// Deep equality whatever the order of keys (the server sends them sorted).
const same = isDeepStrictEqual;
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

// `ferry ARGS --project PROJECT` as the human; its stdout.
function human(...args) {
  console.log("human: ferry", args.join(" "));
  try {
    return execFileSync(FERRY, [...args, "--project", PROJECT], { encoding: "utf8", env: process.env, timeout: 60_000 });
  } catch (e) {
    check(false, `ferry ${args.join(" ")} succeeds (${e.stderr})`);
  }
}

class Agent {
  constructor(name) {
    this.name = name;
    this.transport = new StdioClientTransport({
      command: FERRY,
      args: ["mcp", "serve", "--as", name, "--project", PROJECT],
      env: process.env,
      stderr: "inherit",
    });
    this.client = new Client({ name: `ferry-e2e-${name}`, version: "0.0.1" });
    this.transport.setProtocolVersion = version => { this.negotiated = version; };
  }

  // Connects, lists the tools, and proves that the SDK validates their results.
  async connect() {
    await this.client.connect(this.transport);
    console.log(this.name, "negotiated", this.negotiated, "server", JSON.stringify(this.client.getServerVersion()));
    check(this.negotiated === "2025-11-25", `${this.name}: initialize negotiates 2025-11-25`);
    const { tools, nextCursor } = await this.client.listTools();
    check(!nextCursor && same(tools.map(t => t.name), TOOLS), `${this.name}: tools/list serves the six core tools`);
    for (const name of TOOLS) {
      const validator = this.client.getToolOutputValidator(name);
      check(validator, `${this.name}: the SDK holds a validator for ${name}'s outputSchema`);
      // The check every call below relies on: a structuredContent that does not match is refused.
      check(!validator({ bogus: 1 }).valid, `${this.name}: the validator of ${name} refuses what does not match`);
    }
  }

  async result(tool, args) {
    // callTool validates structuredContent against the cached outputSchema and throws on a mismatch.
    const result = await this.client.callTool({ name: tool, arguments: args });
    const text = (result.content ?? []).filter(c => c.type === "text").map(c => c.text).join(" ");
    console.log(`${this.name} ${tool} ${JSON.stringify(args)} -> ${result.isError ? "ERROR " : ""}${text} | ${JSON.stringify(result.structuredContent)}`);
    check(text && !text.includes("\n"), `${this.name} ${tool}: a one-line text summary`);
    return { result, text };
  }

  async call(tool, args) {
    const { result } = await this.result(tool, args);
    check(!result.isError, `${this.name} ${tool} ${args.action ?? ""} succeeds`);
    check(result.structuredContent && typeof result.structuredContent === "object", `${this.name} ${tool}: structuredContent`);
    return result.structuredContent;
  }

  async refused(tool, args) {
    const { result, text } = await this.result(tool, args);
    check(result.isError === true, `${this.name} ${tool} ${args.action ?? ""} is refused`);
    return text;
  }

  // The app quits: stdin closes and the server exits.
  async stop() {
    const child = this.transport._process;
    await this.client.close();
    check(child.exitCode === 0, `${this.name}'s server exits with 0 (${child.exitCode})`);
  }
}

function orderId(orders, title) {
  const found = orders.filter(o => o.title === title).map(o => o.id);
  check(found.length === 1, `the order "${title}" is on the board`);
  return found[0];
}

const started = performance.now();
const dev = new Agent("dev"), lead = new Agent("lead"), ops2 = new Agent("ops2");
for (const agent of [dev, lead, ops2]) await agent.connect();

for (const [agent, level] of [[dev, "member"], [lead, "orchestrator"], [ops2, "orchestrator"]]) {
  const joined = await agent.call("ferry_join", {});
  check(joined.agent === agent.name && joined.level === level, `${agent.name} joins as ${level}`);
  check(joined.primary.name === "lead" && joined.primary.alive, `${agent.name} sees lead alive as primary`);
}
const first = await dev.call("ferry_catchup", {});
check(same(first.primary, { name: "lead", state: "alive" }), "the catch-up names lead, alive");
check(first.brief.objective === OBJECTIVE, "the catch-up carries lead's brief");
const parser = orderId(first.open, PARSER_TITLE), docs = orderId(first.open, DOCS_TITLE);
check(same(first.open.map(o => o.id), [parser, docs]), "both orders are open");
check(!("mine" in first), "dev holds nothing yet");
const since = first.next;
const digest = await lead.call("ferry_catchup", {});
check(digest.brief.objective === OBJECTIVE, "lead catches up on its brief");

const claimed = await dev.call("ferry_orders", { action: "claim", id: parser });
check(claimed.outcome === "claimed", "dev claims the parser");
const progress = await dev.call("ferry_orders", { action: "progress", id: parser, note: "lexer done, grammar next" });
check(progress.state === "in_progress", "dev reports progress");
const submitted = await dev.call("ferry_orders", { action: "submit", id: parser, ref: "dev/parser", note: "parser with tests" });
check(submitted.state === "submitted", "dev submits a git ref");
const own = await dev.refused("ferry_orders", { action: "review", id: parser, verdict: "accept" });
check(own === "own_submission: dev submitted this revision and cannot review it", "the author may not review");

const posted = await dev.call("ferry_talk", { action: "post", to: "lead", text: "parser submitted as dev/parser" });
const message = posted.id;
const read = await lead.call("ferry_talk", { action: "read" });
check(same(read.messages, [{ id: message, from: "dev", to: "lead", text: "parser submitted as dev/parser" }]), "lead reads dev's message");

const raised = await dev.call("ferry_ask_human", {
  action: "raise",
  title: "Publish the parser crate?",
  recommendation: "yes, as 0.1.0",
  reasoning: "the review is under way and the API is small",
});
check(raised.state === "pending", "dev's ask is pending");
const ask = raised.id;
const listed = JSON.parse(human("ask", "list", "--pending", "--json"));
check(same(listed.asks.map(a => a.id), [ask]) && listed.asks[0].by === "dev", "the human sees dev's ask");
check(human("ask", "approve", ask, "--note", "go ahead").trim() === `ask ${ask} is approved`, "the human approves it");
const status = await dev.call("ferry_ask_human", { action: "status", id: ask });
check(same(status, { id: ask, state: "approved", note: "go ahead" }), "dev sees the approval");

const ops2Digest = await ops2.call("ferry_catchup", {});
check((ops2Digest.waiting_on_you ?? []).includes(`${parser} is submitted: review it`), "the review waits on ops2");
const reviewed = await ops2.call("ferry_orders", { action: "review", id: parser, verdict: "accept" });
check(reviewed.state === "accepted", "ops2 accepts the parser");
const early = await ops2.refused("ferry_primary", { action: "takeover" });
check(early.startsWith("primary_alive: "), "no takeover while lead is alive");

human("primary", "quiet-period", "8s");
await lead.stop();
const waited = performance.now();
let primary;
for (;;) {
  primary = await ops2.call("ferry_primary", { action: "status" });
  check(primary.primary === "lead", "lead is still primary");
  if (primary.state === "silent") break;
  check(performance.now() - waited < SILENCE_TIMEOUT_MS, "lead goes silent within the timeout");
  await sleep(100);
}
const silenceWait = performance.now() - waited;
check(primary.rule === "lead is silent: you may take over (action takeover)", "ops2 may take over");
const took = await ops2.call("ferry_primary", { action: "takeover" });
check(took.outcome === "took_over" && took.primary === "ops2", "ops2 takes over");

const news = await dev.call("ferry_talk", { action: "read" });
check(news.messages.length === 1 && news.messages[0].from === "ops2" && news.messages[0].to === "all"
  && news.messages[0].text === "taking over from lead", "dev reads that ops2 is taking over from lead");
check(same(news.sent, [{ id: message, read: ["lead"], unread: [] }]), "dev's receipt says lead read its message");

const sinceDigest = await dev.call("ferry_catchup", { since });
check(same(sinceDigest.primary, { name: "ops2", state: "alive" }), "the news: ops2 is primary");
check(same(sinceDigest.mine.map(o => [o.id, o.state]), [[parser, "accepted"]]), "the news: the parser is accepted");
check(same(sinceDigest.asks, [{ id: ask, state: "approved" }]), "the news: the ask is approved");
for (const unchanged of ["brief", "decisions", "open", "waiting_on_you", "reset"]) {
  check(!(unchanged in sinceDigest), `the catch-up since the first leaves out ${unchanged}`);
}
check(sinceDigest.next !== since, "a new cursor");

await dev.stop();
await ops2.stop();
console.log(`the whole fleet flow took ${((performance.now() - started) / 1000).toFixed(1)} s `
  + `(of which ${(silenceWait / 1000).toFixed(1)} s waiting for lead to go silent)`);
