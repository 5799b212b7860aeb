"""The official model SDKs against the scripted model server, streaming.

usage: clients.py BASE_URL API_KEY

Each case makes one streamed request with the official `openai` or `anthropic` client and
reports what the client assembled; the whole report is printed as one JSON object on stdout
(tests/e2e/scripted_sdk.rs compares it with the script). Only BASE_URL (loopback) is contacted;
the clients never retry.
"""

import json
import sys

import anthropic
import openai


def chat_accumulated(client, marker):
    """chat.completions.create(stream=True): content and tool calls accumulated by hand."""
    stream = client.chat.completions.create(
        model="gpt-test",
        messages=[{"role": "user", "content": marker}],
        stream=True,
        stream_options={"include_usage": True},
    )
    roles, content, calls, finish, usage, ids = [], "", {}, None, None, set()
    for chunk in stream:
        ids.add(chunk.id)
        if chunk.usage is not None:
            usage = {
                "prompt_tokens": chunk.usage.prompt_tokens,
                "completion_tokens": chunk.usage.completion_tokens,
                "total_tokens": chunk.usage.total_tokens,
                "cached_tokens": chunk.usage.prompt_tokens_details.cached_tokens,
            }
        for choice in chunk.choices:
            delta = choice.delta
            if delta.role:
                roles.append(delta.role)
            content += delta.content or ""
            for call in delta.tool_calls or []:
                slot = calls.setdefault(call.index, {"id": None, "name": None, "arguments": ""})
                if call.id:
                    slot["id"] = call.id
                if call.function and call.function.name:
                    slot["name"] = call.function.name
                if call.function and call.function.arguments:
                    slot["arguments"] += call.function.arguments
            if choice.finish_reason:
                finish = choice.finish_reason
    return {
        "ids": sorted(ids),
        "roles": roles,
        "content": content or None,
        "tool_calls": [calls[i] for i in sorted(calls)],
        "finish_reason": finish,
        "usage": usage,
    }


def chat_helper(client, marker):
    """chat.completions.stream(...): the SDK's own accumulation."""
    with client.chat.completions.stream(
        model="gpt-test",
        messages=[{"role": "user", "content": marker}],
        stream_options={"include_usage": True},
    ) as stream:
        completion = stream.get_final_completion()
    message = completion.choices[0].message
    return {
        "content": message.content,
        "tool_calls": [
            {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
            for c in message.tool_calls or []
        ],
        "finish_reason": completion.choices[0].finish_reason,
        "usage": {
            "prompt_tokens": completion.usage.prompt_tokens,
            "completion_tokens": completion.usage.completion_tokens,
            "total_tokens": completion.usage.total_tokens,
            "cached_tokens": completion.usage.prompt_tokens_details.cached_tokens,
        },
    }


def responses_stream(client, marker):
    """responses.stream(...): the event types seen and the final response."""
    types, text = [], ""
    with client.responses.stream(model="o-test", input=marker) as stream:
        for event in stream:
            types.append(event.type)
            if event.type == "response.output_text.delta":
                text += event.delta
        final = stream.get_final_response()
    items = []
    for item in final.output:
        if item.type == "message":
            items.append({"type": "message", "text": "".join(c.text for c in item.content)})
        elif item.type == "function_call":
            items.append(
                {
                    "type": "function_call",
                    "call_id": item.call_id,
                    "name": item.name,
                    "arguments": item.arguments,
                }
            )
    usage = final.usage
    return {
        "event_types": types,
        "delta_text": text,
        "output_text": final.output_text,
        "status": final.status,
        "output": items,
        "usage": {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "total_tokens": usage.total_tokens,
            "cached_tokens": usage.input_tokens_details.cached_tokens,
        },
    }


def anthropic_stream(client, marker):
    """messages.stream(...) -> get_final_message(), and the text the text stream gave."""
    with client.messages.stream(
        model="claude-test",
        max_tokens=100,
        messages=[{"role": "user", "content": marker}],
    ) as stream:
        text = "".join(stream.text_stream)
        message = stream.get_final_message()
    blocks = []
    for block in message.content:
        if block.type == "text":
            blocks.append({"type": "text", "text": block.text})
        elif block.type == "tool_use":
            blocks.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
            )
    return {
        "text_stream": text,
        "content": blocks,
        "stop_reason": message.stop_reason,
        "usage": {
            "input_tokens": message.usage.input_tokens,
            "output_tokens": message.usage.output_tokens,
            "cache_read_input_tokens": message.usage.cache_read_input_tokens,
        },
    }


def responses_truncated(client, marker):
    """responses.create(stream=True) on a truncated answer: the last event and its response."""
    events = list(client.responses.create(model="o-test", input=marker, stream=True))
    last = events[-1]
    return {
        "last_event": last.type,
        "status": last.response.status,
        "incomplete_reason": last.response.incomplete_details.reason,
        "output_text": last.response.output_text,
    }


def streamed_error(call):
    """A streamed request the script answers with an error status: what the client raised."""
    try:
        call()
    except openai.APIStatusError as e:
        return {"raised": type(e).__name__, "status": e.status_code}
    except anthropic.APIStatusError as e:
        return {"raised": type(e).__name__, "status": e.status_code}
    return {"raised": None}


def main():
    base_url, api_key = sys.argv[1], sys.argv[2]
    oai = openai.OpenAI(base_url=f"{base_url}/v1", api_key=api_key, max_retries=0, timeout=30)
    ant = anthropic.Anthropic(base_url=base_url, api_key=api_key, max_retries=0, timeout=30)
    report = {
        "versions": {"openai": openai.__version__, "anthropic": anthropic.__version__},
        "chat_text": chat_accumulated(oai, "case chat_text"),
        "chat_tools": chat_accumulated(oai, "case chat_tools"),
        "chat_helper": chat_helper(oai, "case chat_helper"),
        "responses": responses_stream(oai, "case responses"),
        "anthropic": anthropic_stream(ant, "case anthropic"),
        "chat_truncated": chat_accumulated(oai, "case truncated"),
        "responses_truncated": responses_truncated(oai, "case truncated"),
        "anthropic_truncated": anthropic_stream(ant, "case truncated"),
        "chat_error": streamed_error(lambda: chat_accumulated(oai, "case error")),
        "anthropic_error": streamed_error(lambda: anthropic_stream(ant, "case error")),
    }
    json.dump(report, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
