"""Inspect AI tasks mirroring the workloads of bench/compare.sh (not part of the test suite).

qa:      N samples "What is 2+2? Answer with only the number." -> target "4", solver generate(),
         scorer match(); the model is mockllm/model whose every output is "4" WITH usage set, so
         Inspect never counts tokens with tiktoken (which would download its BPE file).
sandbox: N samples, each runs the same shell command as our `example_self_check` benchmark
         (`sh -c 'echo $((a + b))'`) in Inspect's `local` sandbox via sandbox().exec(), scorer
         match() against a + b.

Run: inspect eval bench/inspect_tasks.py@qa -T n=1000 --model mockllm/model ...
"""

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import match
from inspect_ai.solver import Generate, TaskState, generate, solver
from inspect_ai.util import sandbox

QUESTION = "What is 2+2? Answer with only the number."


def _answer_four(input, tools, tool_choice, config) -> ModelOutput:
    # A callable, not a list: a shared iterator would be consumed across samples.
    out = ModelOutput.from_content(model="mockllm", content="4")
    out.usage = ModelUsage(input_tokens=20, output_tokens=1, total_tokens=21)
    return out


@task
def qa(n: int = 1000) -> Task:
    samples = [Sample(id=f"q-{i:05d}", input=QUESTION, target="4") for i in range(1, n + 1)]
    return Task(
        dataset=MemoryDataset(samples),
        solver=generate(),
        scorer=match(),
        model=get_model("mockllm/model", custom_outputs=_answer_four),
    )


@solver
def run_in_sandbox():
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        cmd = state.metadata["command"]
        result = await sandbox().exec(["sh", "-c", cmd])
        state.output = ModelOutput.from_content(model="none", content=result.stdout.strip())
        return state

    return solve


@task
def sandbox_exec(n: int = 1000) -> Task:
    samples = []
    for i in range(n):
        a, b = i % 97, (i * 7) % 89
        samples.append(
            Sample(
                id=f"self-{i:04d}",
                input=f"What is {a} + {b}?",
                target=str(a + b),
                metadata={"command": f"sh -c 'echo $(({a} + {b}))'"},
            )
        )
    return Task(
        dataset=MemoryDataset(samples),
        solver=run_in_sandbox(),
        scorer=match(),
        sandbox="local",
        model=get_model("mockllm/model", custom_outputs=_answer_four),
    )
