"""Skill files and how the server matches them against what a user asks, read off its source.

A skill file is YAML front matter between ``---`` lines (read by the server's own line parser, not
a YAML library: ``id`` and ``name`` required, ``category``, ``priority``, ``token_budget``,
``description``, ``triggers`` with ``keywords`` and ``tool_target``, ``anti_triggers``) and a
Markdown body. A query scores each skill by description phrases (+0.3 each, at most 0.9), trigger
keywords (+0.4), tool + action (+0.5, the tool alone +0.2), anti-triggers (-1.0), priority
(+0.1 at 100) and strong BM25 overlap with the skill's trigger text; skills scoring above zero are
returned best first within the model's token budget. Scores are computed in single precision as
the server computes them, and are given as their shortest single-precision decimal.
"""

from __future__ import annotations

import math
import re
import struct
from collections import Counter
from collections.abc import Sequence

import numpy as np

from hardware.ports.memory import Skill, SkillMatch, ToolTarget
from twin.automation.memory import rust_lines

CATEGORIES = ("device", "rule", "agent", "message", "extension")
U32_MAX, U64 = 2**32 - 1, 2**64
UNSIGNED = re.compile(r"\+?[0-9]+")
QUOTED = re.compile(r'"[^"]*"|“[^”]*”|「[^」]*」|\'[^\']*\'')


class ParseError(ValueError):
    pass


def f32(x: float) -> float:
    """``x`` rounded to single precision."""
    return struct.unpack("f", struct.pack("f", x))[0]


K1, B = f32(1.2), f32(0.75)


def f32_shortest(x: float) -> float:
    """The shortest decimal that reads back as the single-precision ``x`` (what the server prints)."""
    for digits in range(1, 10):
        candidate = float(f"{x:.{digits}g}")
        if f32(candidate) == x:
            return candidate
    return x


# Parsing -------------------------------------------------------------------------------------
def _unsigned(value: str, default: int, top: int) -> int:
    return int(value) if UNSIGNED.fullmatch(value) and int(value) <= top else default


def _list_value(value: str) -> list[str]:
    value = value.strip()
    if value.startswith("[") and value.endswith("]") and len(value) >= 2:
        items = (s.strip().strip('"').strip("'") for s in value[1:-1].split(","))
        return [s for s in items if s]
    return [value] if value else []


def _kv(line: str) -> tuple[str, str] | None:
    key, sep, value = line.partition(":")
    key = key.strip()
    return (key, value.strip()) if sep and key else None


def _split(content: str) -> tuple[str, str]:
    text = content.lstrip()
    if not text.startswith("---"):
        raise ParseError("Missing YAML frontmatter delimiters (---)")
    rest = text[3:].lstrip("\n\r")
    end = rest.find("\n---")
    if end < 0:
        raise ParseError("Missing YAML frontmatter delimiters (---)")
    return rest[:end], rest[end + 4 :].lstrip("\n\r")


def parse_skill(content: str, origin: str = "user") -> Skill:
    """``ParseError`` (the server's message) when the file is not a skill."""
    front, body = _split(content)
    fields: dict[str, str] = {}
    keywords: list[str] = []
    anti: list[str] = []
    targets: list[list] = []
    section = ""
    for line in rust_lines(front):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line in ("triggers:", "anti_triggers:", "tool_target:"):
            section = line[:-1]
            continue
        if line.startswith("- "):
            item = line[2:].strip().strip('"').strip("'")
            if section == "triggers":
                keywords.append(item)
            elif section == "anti_triggers":
                anti.append(item)
            elif section == "tool_target" and (kv := _kv(item)) and kv[0] == "tool":
                targets.append([kv[1], []])
            continue
        if (kv := _kv(line)) is None:
            continue
        key, value = kv
        if key in ("id", "name", "description", "category", "origin", "priority", "token_budget"):
            fields[key] = value
            section = ""
        elif key in ("triggers", "anti_triggers", "tool_target"):
            section = key
        elif key == "keywords" and section in ("triggers", "anti_triggers"):
            if section == "triggers":
                keywords = _list_value(value)
            else:
                anti = _list_value(value)
        elif key == "tool" and section == "tool_target":
            targets.append([value, []])
        elif key == "actions" and section == "tool_target" and targets:
            targets[-1][1] = _list_value(value)
    for required in ("id", "name"):
        if required not in fields:
            raise ParseError(f"Missing required field: {required}")
    category = fields.get("category", "")
    return Skill(
        id=fields["id"],
        name=fields["name"],
        description=fields.get("description", "")[:1024],
        category=category if category in CATEGORIES else "general",
        origin=origin,
        priority=_unsigned(fields.get("priority", ""), 50, U32_MAX),
        token_budget=_unsigned(fields.get("token_budget", ""), 500, U64 - 1),
        keywords=tuple(keywords),
        tool_targets=tuple(ToolTarget(tool, tuple(actions)) for tool, actions in targets),
        anti_trigger_keywords=tuple(anti),
        body=body.strip(),
    )


# BM25 over the skills' trigger text ------------------------------------------------------------
RUN = re.compile("[a-z0-9]+|[\u4e00-\u9fff\u3400-\u4dbf\uf900-\ufaff]+")
"""A run of ASCII letters and digits, or of CJK ideographs (the basic block, extension A and the
compatibility block); anything else separates runs."""


def tokenize(text: str) -> list[str]:
    """Latin runs of two or more letters or digits; CJK runs as character bigrams."""
    out: list[str] = []
    for run in RUN.findall(text.lower()):
        if len(run) < 2:
            continue
        if run[0].isascii():
            out.append(run)
        else:
            out.extend(run[k : k + 2] for k in range(len(run) - 1))
    return out


class Bm25:
    """Each skill's contribution per term is fixed by the corpus; a query's score is their sum in
    the query's token order, accumulated in single precision as the server adds them."""

    def __init__(self, docs: Sequence[str]) -> None:
        counts = [Counter(tokenize(d)) for d in docs]
        self.vocabulary = {term: k for k, term in enumerate(sorted({t for c in counts for t in c}))}
        self.contributions = np.zeros((len(counts), len(self.vocabulary) + 1), dtype=np.float32)
        if not counts:
            return
        n, total = f32(len(counts)), 0.0
        for c in counts:
            total = f32(total + f32(sum(c.values())))
        avg_len = f32(total / n)
        if avg_len == 0.0:
            return
        df = Counter(term for c in counts for term in c)
        for i, c in enumerate(counts):
            norm = f32(K1 * f32(f32(1.0 - B) + f32(f32(B * f32(sum(c.values()))) / avg_len)))
            for term, tf in c.items():
                d = f32(df[term])
                idf = f32(math.log(f32(f32(f32(f32(n - d) + 0.5) / f32(d + 0.5)) + 1.0)))
                tf_norm = f32(f32(tf * f32(K1 + 1.0)) / f32(tf + norm))
                self.contributions[i, self.vocabulary[term]] = f32(idf * tf_norm)

    def scores(self, query: Sequence[str]) -> list[float]:
        """Every skill's raw score for the query tokens (a term no skill has adds nothing)."""
        unknown = len(self.vocabulary)
        ids = np.fromiter((self.vocabulary.get(t, unknown) for t in query), dtype=np.intp, count=len(query))
        if not len(ids):
            return [0.0] * len(self.contributions)
        return [float(np.cumsum(row[ids], dtype=np.float32)[-1]) for row in self.contributions]


# Matching ------------------------------------------------------------------------------------
def intent_phrases(description: str) -> list[str]:
    """Quoted synonyms, the ``Includes a/b/c`` vocabulary and the ``e.g.`` examples, each once."""
    out: list[str] = []

    def add(phrase: str) -> None:
        if phrase and phrase not in out:
            out.append(phrase)

    for m in QUOTED.finditer(description):
        add(m.group().lstrip("\"“「'").rstrip("\"”」'"))
    if (at := description.find("Includes ")) >= 0:
        for piece in re.split("[/，,]", description[at + len("Includes ") :]):  # noqa: RUF001
            if len((p := piece.strip().rstrip("。")).encode()) >= 2:
                add(p)
    if (at := description.find("e.g. ")) >= 0:
        seg = description[at + len("e.g. ") :]
        end = min((i for i in (seg.find(")"), seg.find("."), seg.find("\n")) if i >= 0), default=len(seg))
        for piece in re.split("[;；,]", seg[:end]):  # noqa: RUF001
            if len((p := piece.strip().rstrip(")").strip()).encode()) >= 3:
                add(p)
    return out


def score_skill(skill: Skill, text: str) -> float:
    """``text``: the query, lowercased."""
    score = 0.0
    if skill.description:
        hits = 0.0
        for phrase in intent_phrases(skill.description):
            lowered = phrase.lower()
            if len(lowered) >= 2 and lowered in text:
                hits = f32(hits + f32(0.3))
                if hits >= f32(0.9):
                    break
        score = f32(score + hits)
    for keyword in skill.keywords:
        if keyword.lower() in text:
            score = f32(score + f32(0.4))
    for target in skill.tool_targets:
        if target.tool.lower() in text:
            acted = any(a.lower() in text for a in target.actions)
            score = f32(score + f32(0.5 if acted else 0.2))
    for keyword in skill.anti_trigger_keywords:
        if keyword.lower() in text:
            score = f32(score - 1.0)
    return f32(score + f32(f32(f32(skill.priority) / 100.0) * f32(0.1)))


def searchable_text(skill: Skill) -> str:
    parts = [skill.name, skill.description, *skill.keywords]
    for target in skill.tool_targets:
        parts += [target.tool, *target.actions]
    return " ".join(parts)


def within_budget(skill: Skill) -> str:
    """The body cut to the skill's own token budget (four bytes a token), at a paragraph if it can."""
    budget = skill.token_budget * 4 % U64  # the server's arithmetic wraps
    if len(skill.body.encode()) <= budget:
        return skill.body
    cut = skill.body[:budget]
    at = cut.rfind("\n\n")
    return skill.body[:at] if at >= 0 else cut


def truncate_at_boundary(text: str, max_chars: int) -> str:
    if len(text.encode()) <= max_chars:
        return text
    cut = text[:max_chars]
    for boundary in ("\n\n", "\n"):
        if (at := cut.rfind(boundary)) >= 0:
            return text[:at]
    return cut


def token_budget(context_size: int) -> int:
    for most, budget in ((4000, 400), (8000, 800), (16000, 4000)):
        if context_size <= most:
            return budget
    return 8000


def match_skills(skills: Sequence[Skill], query: str, context_size: int) -> list[SkillMatch]:
    bm25 = Bm25([searchable_text(s) for s in skills]).scores(tokenize(query))
    text = query.lower()
    scored: list[tuple[float, Skill]] = []
    for skill, raw in zip(skills, bm25, strict=True):
        score = score_skill(skill, text)
        if raw > 1.0:
            score = f32(score + f32(f32(raw - 1.0) * f32(0.3)))
        if score > 0.0:
            scored.append((score, skill))
    scored.sort(key=lambda pair: -pair[0])
    budget, used, out = token_budget(context_size), 0, []
    for score, skill in scored:
        remaining = max(budget - used, 0)
        if remaining == 0:
            break
        body = within_budget(skill)
        if len(body.encode()) // 4 > remaining:
            body = truncate_at_boundary(body, remaining * 4)
        used += len(body.encode()) // 4
        out.append(SkillMatch(skill.id, skill.name, f32_shortest(score), body))
    return out
