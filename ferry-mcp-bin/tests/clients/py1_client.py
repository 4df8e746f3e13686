"""Drive `ferry mcp serve --tools fixture` with the official Python SDK 1.x (ClientSession).
usage: py1/bin/python py1_client.py <server argv...>   (env passes through to the server)
Exits non-zero on the first failed check."""
import asyncio
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import McpError

from probe import ORDER_TOOL, STATUS_TOOL, check, check_read, check_status_result, check_tools, dump, missing_uri, order_link, run, ORDER_ARGS, BAD_ORDER_ARGS, check_bad_arguments

TIMEOUT = 20


async def probe():
    params = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:], env=dict(os.environ))
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as s:
            init = await asyncio.wait_for(s.initialize(), TIMEOUT)
            print("negotiated", init.protocolVersion, "server", dump(init.serverInfo))
            check(init.protocolVersion == "2025-11-25", "initialize negotiates 2025-11-25")
            await s.send_ping()
            check(True, "ping answers")
            tools, cur = [], None
            while True:
                page = await (s.list_tools(cursor=cur) if cur else s.list_tools())
                tools += [dump(t) for t in page.tools]
                cur = page.nextCursor
                if not cur:
                    break
            check_tools(tools)
            check_status_result(dump(await s.call_tool(STATUS_TOOL, {})))
            link = order_link(dump(await s.call_tool(ORDER_TOOL, ORDER_ARGS)))
            check_read(link, [dump(c) for c in (await s.read_resource(link)).contents])
            check_bad_arguments(dump(await s.call_tool(ORDER_TOOL, BAD_ORDER_ARGS)))
            try:
                unknown = dump(await s.call_tool("no_such_tool", {}))
                check(unknown.get("isError"), "an unknown tool is refused")
            except McpError as err:
                print("unknown tool ->", err.error.code, err.error.message)
                check(err.error.code == -32602, "an unknown tool is refused with -32602")
            try:
                await s.read_resource(missing_uri(link))
                check(False, "a missing resource is an error")
            except McpError as err:
                print("missing resource ->", err.error.code, err.error.message)
                check(err.error.code == -32002, "a missing resource is error -32002 (initialize era)")


run(lambda: asyncio.run(probe()))
