"""Drive `ferry mcp serve --tools fixture` with the official Python SDK 2.x high-level Client.
usage: PYMODE=auto|legacy|2026-07-28 py2/bin/python py2_client.py <server argv...>
Prints `connect_ms=<n>`: the time from opening the client to a negotiated connection.
In auto mode the client tries server/discover first; the probe checks that it got 2026-07-28.
Exits non-zero on the first failed check."""
import asyncio
import os
import sys
import time

from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError as McpError

from probe import ORDER_TOOL, STATUS_TOOL, check, check_read, check_status_result, check_tools, dump, missing_uri, order_link, run, ORDER_ARGS, BAD_ORDER_ARGS, check_bad_arguments

MODE = os.environ.get("PYMODE", "auto")
EXPECTED = {"auto": "2026-07-28", "2026-07-28": "2026-07-28", "legacy": "2025-11-25"}


async def probe():
    params = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:], env=dict(os.environ))
    started = time.perf_counter()
    async with Client(params, mode=MODE) as c:
        connect_ms = (time.perf_counter() - started) * 1000
        print(f"connect_ms={connect_ms:.1f}", flush=True)
        print("negotiated", c.protocol_version, "server", c.server_info)
        check(c.protocol_version == EXPECTED[MODE], f"mode {MODE} negotiates {EXPECTED[MODE]}")
        tools, cur = [], None
        while True:
            page = await c.list_tools(cursor=cur)
            tools += [dump(t) for t in page.tools]
            cur = page.next_cursor
            if not cur:
                break
        check_tools(tools)
        check_status_result(dump(await c.call_tool(STATUS_TOOL, {})))
        link = order_link(dump(await c.call_tool(ORDER_TOOL, ORDER_ARGS)))
        check_read(link, [dump(x) for x in (await c.read_resource(link)).contents])
        check_bad_arguments(dump(await c.call_tool(ORDER_TOOL, BAD_ORDER_ARGS)))
        try:
            unknown = dump(await c.call_tool("no_such_tool", {}))
            check(unknown.get("isError"), "an unknown tool is refused")
        except McpError as err:
            print("unknown tool ->", err.error.code, err.error.message)
            check(err.error.code == -32602, "an unknown tool is refused with -32602")
        try:
            await c.read_resource(missing_uri(link))
            check(False, "a missing resource is an error")
        except McpError as err:
            print("missing resource ->", err.error.code, err.error.message)
            code = -32002 if EXPECTED[MODE] == "2025-11-25" else -32602
            check(err.error.code == code, f"a missing resource is error {code} under {EXPECTED[MODE]}")


run(lambda: asyncio.run(probe()))
