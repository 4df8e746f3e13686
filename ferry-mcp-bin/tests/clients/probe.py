"""Shared checks of the Python client probes (py1_client.py, py2_client.py).

The probes drive `ferry mcp serve --tools fixture` through an official SDK client and exit
non-zero on the first failed check. The fixture group serves `fixture_status` (a result with
structuredContent that the client validates against the outputSchema) and `fixture_order`
(a result carrying a `resource_link` to a `ferry://` URI that resources/read serves)."""
import json
import sys

STATUS_TOOL = "fixture_status"
ORDER_TOOL = "fixture_order"


class ProbeFailed(Exception):
    pass


def check(condition, what):
    if not condition:
        print("FAILED:", what, file=sys.stderr, flush=True)
        raise ProbeFailed(what)
    print("ok:", what, flush=True)


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


# fixture_order knows orders "1", "2" and "42"; a number where a string belongs is refused
# as a tool error (`isError`) that names the field.
ORDER_ARGS = {"id": "42"}
BAD_ORDER_ARGS = {"id": 42}


def check_tools(tools):
    names = [t["name"] for t in tools]
    print("tools", names, "chars", len(json.dumps(tools, separators=(",", ":"))))
    check(STATUS_TOOL in names and ORDER_TOOL in names, f"tools/list serves {STATUS_TOOL} and {ORDER_TOOL}")
    check(names == sorted(names), "tools/list is sorted by name")
    status = next(t for t in tools if t["name"] == STATUS_TOOL)
    check("outputSchema" in status, f"{STATUS_TOOL} has an outputSchema")
    return {t["name"]: t for t in tools}


def check_status_result(result):
    print(STATUS_TOOL, "->", json.dumps(result))
    check(not result.get("isError", False), f"{STATUS_TOOL} succeeds")
    check(isinstance(result.get("structuredContent"), dict), f"{STATUS_TOOL} carries structuredContent (validated by the client)")
    check(any(c.get("type") == "text" and c.get("text") for c in result.get("content", [])), f"{STATUS_TOOL} has a text summary")


def order_link(result):
    print(ORDER_TOOL, "->", json.dumps(result))
    check(not result.get("isError", False), f"{ORDER_TOOL} succeeds")
    links = [c for c in result.get("content", []) if c.get("type") == "resource_link"]
    check(links and str(links[0]["uri"]).startswith("ferry://"), f"{ORDER_TOOL} links a ferry:// resource")
    return str(links[0]["uri"])


def check_read(uri, contents):
    print("read", uri, "->", json.dumps(contents))
    check(contents and contents[0].get("text"), f"resources/read serves {uri}")


def check_bad_arguments(result):
    print(ORDER_TOOL, BAD_ORDER_ARGS, "->", json.dumps(result))
    check(result.get("isError") is True, "arguments that do not match the inputSchema are a tool error")
    text = " ".join(c.get("text", "") for c in result.get("content", []))
    # "`id`", not "id": the word "invalid" holds "id" too.
    check("`id`" in text and "string" in text, "the tool error names the field and what was expected")


def missing_uri(link):
    """A URI in the same project as `link` that names nothing."""
    project = link[len("ferry://"):].split("/", 1)[0]
    return f"ferry://{project}/fixture-order/no-such-order"


def run(main):
    """Runs the probe; a failed check (even inside the SDK's task groups) exits with 1."""
    try:
        main()
    except* ProbeFailed:
        sys.exit(1)
