"""The whole fleet flow through the official Python SDK 2.x, each agent a Client in auto mode
(server/discover, so 2026-07-28) over stdio, and the human's steps through the `ferry` CLI.
usage: FERRY_HOME=<state folder> py2/bin/python e2e_py2.py <ferry binary> <project>
The project must be set up as `tests/it/e2e.rs` (`fleet`) does: agents lead (orchestrator,
primary, with a brief), dev (member) and ops2 (orchestrator); orders "Write the parser"
(--review) and "Update the docs".
The SDK validates every structuredContent against the outputSchema it listed (call_tool raises
on a mismatch); the script checks first that it does. Prints each call; exits non-zero on the
first failed check."""
import asyncio
import json
import os
import subprocess
import sys
import time

from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult

from probe import check, dump, run

FERRY, PROJECT = sys.argv[1], sys.argv[2]
TOOLS = ["ferry_ask_human", "ferry_catchup", "ferry_join", "ferry_orders", "ferry_primary", "ferry_talk"]
PARSER_TITLE = "Write the parser"
DOCS_TITLE = "Update the docs"
OBJECTIVE = "Ship the parser this week"
SILENCE_TIMEOUT = 60


def human(*args):
    """`ferry ARGS --project PROJECT` as the human; its stdout."""
    argv = [FERRY, *args, "--project", PROJECT]
    print("human: ferry", " ".join(args), flush=True)
    done = subprocess.run(argv, capture_output=True, text=True, env=dict(os.environ), timeout=60)
    check(done.returncode == 0, f"ferry {' '.join(args)} succeeds ({done.stderr.strip()})")
    return done.stdout


def client(name):
    params = StdioServerParameters(
        command=FERRY, args=["mcp", "serve", "--as", name, "--project", PROJECT], env=dict(os.environ)
    )
    return Client(params, mode="auto")


class Agent:
    def __init__(self, name, c):
        self.name = name
        self.c = c

    async def connect(self):
        """The negotiated version, the tools, and proof that the SDK validates their results."""
        print(self.name, "negotiated", self.c.protocol_version, "server", self.c.server_info, flush=True)
        check(self.c.protocol_version == "2026-07-28", f"{self.name}: auto mode negotiates 2026-07-28")
        tools = [dump(t) for t in (await self.c.list_tools()).tools]
        check([t["name"] for t in tools] == TOOLS, f"{self.name}: tools/list serves the six core tools")
        check(all("outputSchema" in t for t in tools), f"{self.name}: every tool has an outputSchema")
        # The check every call below relies on: a structuredContent that does not match is refused.
        bogus = CallToolResult(content=[], structured_content={"bogus": 1})
        try:
            await self.c.session.validate_tool_result("ferry_join", bogus)
            check(False, f"{self.name}: the SDK refuses a structuredContent that does not match")
        except RuntimeError as err:
            print(self.name, "bogus ferry_join result ->", str(err).splitlines()[0], flush=True)
            check("Invalid structured content" in str(err), f"{self.name}: the SDK validates structuredContent")

    async def result(self, tool, args):
        # call_tool validates structuredContent against the listed outputSchema and raises on a mismatch.
        result = dump(await self.c.call_tool(tool, args))
        text = " ".join(c.get("text", "") for c in result.get("content", []) if c.get("type") == "text")
        flag = "ERROR " if result.get("isError") else ""
        print(f"{self.name} {tool} {json.dumps(args)} -> {flag}{text} | {json.dumps(result.get('structuredContent'))}", flush=True)
        check(text and "\n" not in text, f"{self.name} {tool}: a one-line text summary")
        return result, text

    async def call(self, tool, args):
        result, _ = await self.result(tool, args)
        check(not result.get("isError"), f"{self.name} {tool} {args.get('action', '')} succeeds")
        check(isinstance(result.get("structuredContent"), dict), f"{self.name} {tool}: structuredContent")
        return result["structuredContent"]

    async def refused(self, tool, args):
        result, text = await self.result(tool, args)
        check(result.get("isError") is True, f"{self.name} {tool} {args.get('action', '')} is refused")
        return text


def order_id(orders, title):
    found = [o["id"] for o in orders if o["title"] == title]
    check(len(found) == 1, f"the order {title!r} is on the board")
    return found[0]


async def flow():
    started = time.perf_counter()
    async with client("dev") as dev_c, client("ops2") as ops2_c:
        dev, ops2 = Agent("dev", dev_c), Agent("ops2", ops2_c)
        async with client("lead") as lead_c:
            lead = Agent("lead", lead_c)
            for agent in (dev, ops2, lead):
                await agent.connect()

            for agent, level in ((dev, "member"), (lead, "orchestrator"), (ops2, "orchestrator")):
                joined = await agent.call("ferry_join", {})
                check(joined["agent"] == agent.name and joined["level"] == level, f"{agent.name} joins as {level}")
                check(joined["primary"]["name"] == "lead" and joined["primary"]["alive"], f"{agent.name} sees lead alive as primary")
            first = await dev.call("ferry_catchup", {})
            check(first["primary"] == {"name": "lead", "state": "alive"}, "the catch-up names lead, alive")
            check(first["brief"]["objective"] == OBJECTIVE, "the catch-up carries lead's brief")
            parser, docs = order_id(first["open"], PARSER_TITLE), order_id(first["open"], DOCS_TITLE)
            check([o["id"] for o in first["open"]] == [parser, docs], "both orders are open")
            check("mine" not in first, "dev holds nothing yet")
            since = first["next"]
            digest = await lead.call("ferry_catchup", {})
            check(digest["brief"]["objective"] == OBJECTIVE, "lead catches up on its brief")

            claimed = await dev.call("ferry_orders", {"action": "claim", "id": parser})
            check(claimed["outcome"] == "claimed", "dev claims the parser")
            progress = await dev.call("ferry_orders", {"action": "progress", "id": parser, "note": "lexer done, grammar next"})
            check(progress["state"] == "in_progress", "dev reports progress")
            submitted = await dev.call("ferry_orders", {"action": "submit", "id": parser, "ref": "dev/parser", "note": "parser with tests"})
            check(submitted["state"] == "submitted", "dev submits a git ref")
            own = await dev.refused("ferry_orders", {"action": "review", "id": parser, "verdict": "accept"})
            check(own == "own_submission: dev submitted this revision and cannot review it", "the author may not review")

            posted = await dev.call("ferry_talk", {"action": "post", "to": "lead", "text": "parser submitted as dev/parser"})
            message = posted["id"]
            read = await lead.call("ferry_talk", {"action": "read"})
            check(read["messages"] == [{"id": message, "from": "dev", "to": "lead", "text": "parser submitted as dev/parser"}], "lead reads dev's message")

            raised = await dev.call("ferry_ask_human", {
                "action": "raise",
                "title": "Publish the parser crate?",
                "recommendation": "yes, as 0.1.0",
                "reasoning": "the review is under way and the API is small",
            })
            check(raised["state"] == "pending", "dev's ask is pending")
            ask = raised["id"]
            listed = json.loads(human("ask", "list", "--pending", "--json"))
            check([a["id"] for a in listed["asks"]] == [ask] and listed["asks"][0]["by"] == "dev", "the human sees dev's ask")
            approved = human("ask", "approve", ask, "--note", "go ahead")
            check(approved.strip() == f"ask {ask} is approved", "the human approves it")
            status = await dev.call("ferry_ask_human", {"action": "status", "id": ask})
            check(status == {"id": ask, "state": "approved", "note": "go ahead"}, "dev sees the approval")

            ops2_digest = await ops2.call("ferry_catchup", {})
            check(f"{parser} is submitted: review it" in ops2_digest.get("waiting_on_you", []), "the review waits on ops2")
            reviewed = await ops2.call("ferry_orders", {"action": "review", "id": parser, "verdict": "accept"})
            check(reviewed["state"] == "accepted", "ops2 accepts the parser")
            early = await ops2.refused("ferry_primary", {"action": "takeover"})
            check(early.startswith("primary_alive: "), "no takeover while lead is alive")

            human("primary", "quiet-period", "8s")
        # lead's app has quit: its server is stopped.
        print("lead's server stopped", flush=True)
        waited = time.perf_counter()
        while True:
            status = await ops2.call("ferry_primary", {"action": "status"})
            check(status["primary"] == "lead", "lead is still primary")
            if status.get("state") == "silent":
                break
            check(time.perf_counter() - waited < SILENCE_TIMEOUT, "lead goes silent within the timeout")
            await asyncio.sleep(0.1)
        silence_wait = time.perf_counter() - waited
        check(status["rule"] == "lead is silent: you may take over (action takeover)", "ops2 may take over")
        took = await ops2.call("ferry_primary", {"action": "takeover"})
        check(took["outcome"] == "took_over" and took["primary"] == "ops2", "ops2 takes over")

        news = await dev.call("ferry_talk", {"action": "read"})
        messages = news["messages"]
        check(len(messages) == 1 and messages[0]["from"] == "ops2" and messages[0]["to"] == "all"
              and messages[0]["text"] == "taking over from lead", "dev reads that ops2 is taking over from lead")
        check(news.get("sent") == [{"id": message, "read": ["lead"], "unread": []}], "dev's receipt says lead read its message")

        since_digest = await dev.call("ferry_catchup", {"since": since})
        check(since_digest["primary"] == {"name": "ops2", "state": "alive"}, "the news: ops2 is primary")
        check([(o["id"], o["state"]) for o in since_digest["mine"]] == [(parser, "accepted")], "the news: the parser is accepted")
        check(since_digest["asks"] == [{"id": ask, "state": "approved"}], "the news: the ask is approved")
        for unchanged in ("brief", "decisions", "open", "waiting_on_you", "reset"):
            check(unchanged not in since_digest, f"the catch-up since the first leaves out {unchanged}")
        check(since_digest["next"] != since, "a new cursor")
    print(f"the whole fleet flow took {time.perf_counter() - started:.1f} s "
          f"(of which {silence_wait:.1f} s waiting for lead to go silent)", flush=True)


run(lambda: asyncio.run(flow()))
