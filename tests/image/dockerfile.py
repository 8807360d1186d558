"""The Dockerfile read as data: its stages and their instructions (the image tests compare the
built image's configuration with what the file declares)."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

DOCKERFILE = Path(__file__).resolve().parents[2] / "Dockerfile"


@dataclass
class Instruction:
    keyword: str
    args: str

    def json_args(self) -> list[str]:
        return json.loads(self.args)


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def last(self, keyword: str) -> Instruction:
        found = self.all(keyword)
        assert found, f"no {keyword} in stage {self.name or self.base}"
        return found[-1]

    def env(self) -> dict[str, str]:
        values: dict[str, str] = {}
        for instruction in self.all("ENV"):
            for pair in shlex.split(instruction.args):
                key, _, value = pair.partition("=")
                values[key] = value
        return values


def instructions(text: str) -> list[Instruction]:
    """Instructions with continuation lines joined and comment lines dropped."""
    result: list[Instruction] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        whole = pending + line
        pending = ""
        keyword, _, args = whole.partition(" ")
        result.append(Instruction(keyword.upper(), " ".join(args.split())))
    assert not pending, "the Dockerfile ends inside a continued line"
    return result


def parse_dockerfile(path: Path = DOCKERFILE) -> list[Stage]:
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for instruction in instructions(path.read_text()):
        if instruction.keyword == "ARG" and not stages:
            key, _, default = instruction.args.partition("=")
            args[key] = default
        elif instruction.keyword == "FROM":
            words = instruction.args.split()
            base = re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1), ""), words[0])
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append(Stage(base, name))
        else:
            assert stages, f"{instruction.keyword} before the first FROM"
            stages[-1].instructions.append(instruction)
    return stages
