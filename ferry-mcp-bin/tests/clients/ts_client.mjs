// Drive `ferry mcp serve --tools fixture` with @modelcontextprotocol/sdk (TypeScript SDK 1.x).
// usage: node ts_client.mjs <server argv...>   (the file must sit beside the node_modules that
// hold the SDK: ESM ignores NODE_PATH, so the test copies it into the install folder)
// Exits non-zero on the first failed check.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const STATUS_TOOL = "fixture_status";
const ORDER_TOOL = "fixture_order";
// fixture_order knows orders "1", "2" and "42".
const ORDER_ARGS = { id: "42" };
const BAD_ORDER_ARGS = { id: 42 };

function check(condition, what) {
  if (!condition) {
    console.error("FAILED:", what);
    process.exit(1);
  }
  console.log("ok:", what);
}

const [cmd, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({ command: cmd, args, env: process.env, stderr: "inherit" });
const client = new Client({ name: "ferry-ts-probe", version: "0.0.1" });
// The client hands the negotiated version to a transport that wants it; the stdio one does not.
let negotiated;
transport.setProtocolVersion = version => { negotiated = version; };
await client.connect(transport);
console.log("negotiated", negotiated, "server", JSON.stringify(client.getServerVersion()));
check(negotiated === "2025-11-25", "initialize negotiates 2025-11-25");
check(client.getServerVersion()?.name, "initialize names the server");
await client.ping();
check(true, "ping answers");

let tools = [], cursor;
do {
  const page = await client.listTools(cursor ? { cursor } : undefined);
  tools.push(...page.tools);
  cursor = page.nextCursor;
} while (cursor);
const names = tools.map(t => t.name);
console.log("tools", names, "chars", JSON.stringify(tools).length);
check(names.includes(STATUS_TOOL) && names.includes(ORDER_TOOL), `tools/list serves ${STATUS_TOOL} and ${ORDER_TOOL}`);
check(JSON.stringify(names) === JSON.stringify([...names].sort()), "tools/list is sorted by name");

// callTool validates structuredContent against the outputSchema it saw in tools/list.
const status = await client.callTool({ name: STATUS_TOOL, arguments: {} });
console.log(STATUS_TOOL, "->", JSON.stringify(status));
check(!status.isError, `${STATUS_TOOL} succeeds`);
check(status.structuredContent && typeof status.structuredContent === "object", `${STATUS_TOOL} carries structuredContent (validated by the client)`);

const order = await client.callTool({ name: ORDER_TOOL, arguments: ORDER_ARGS });
console.log(ORDER_TOOL, "->", JSON.stringify(order));
const link = (order.content ?? []).find(c => c.type === "resource_link");
check(!order.isError && link && link.uri.startsWith("ferry://"), `${ORDER_TOOL} links a ferry:// resource`);

const read = await client.readResource({ uri: link.uri });
console.log("read", link.uri, "->", JSON.stringify(read.contents));
check(read.contents.length > 0 && read.contents[0].text, `resources/read serves ${link.uri}`);

const bad = await client.callTool({ name: ORDER_TOOL, arguments: BAD_ORDER_ARGS });
console.log(ORDER_TOOL, JSON.stringify(BAD_ORDER_ARGS), "->", JSON.stringify(bad));
check(bad.isError === true, "arguments that do not match the inputSchema are a tool error");
// "`id`", not "id": the word "invalid" holds "id" too.
check(bad.content.some(c => c.type === "text" && c.text.includes("`id`") && c.text.includes("string")), "the tool error names the field and what was expected");

try {
  const unknown = await client.callTool({ name: "no_such_tool", arguments: {} });
  check(unknown.isError, "an unknown tool is refused");
} catch (e) {
  console.log("unknown tool ->", e.code, e.message);
  check(e.code === -32602, "an unknown tool is refused with -32602");
}

const project = link.uri.slice("ferry://".length).split("/")[0];
try {
  await client.readResource({ uri: `ferry://${project}/fixture-order/no-such-order` });
  check(false, "a missing resource is an error");
} catch (e) {
  console.log("missing resource ->", e.code, e.message);
  check(e.code === -32002, "a missing resource is error -32002 (initialize era)");
}
await client.close();
