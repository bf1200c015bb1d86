"""The chat's input suggestions, derived as the vendor's handler derives them, from the world: the
time of day in the server's time zone, the devices (by type, and how many are offline), the chat
sessions' repeated titles, the agents' recent conclusions, then fixed system suggestions. The
texts are the vendor's (Chinese). Deterministic: device types are taken in sorted order and equal
priorities keep their order of derivation.
"""

from __future__ import annotations

import zoneinfo
from collections import Counter
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from twin.automation.server import automation_of
from twin.automation.settings import ServerSettings

if TYPE_CHECKING:
    from twin.world import World

Item = dict[str, Any]
SYSTEM: tuple[tuple[str, str, str, str, str, int], ...] = (
    ("system-automation-list", "查看自动化规则", "显示所有自动化规则", "Zap", "automation", 40),
    ("system-automation-create", "创建自动化", "创建新的自动化规则", "Zap", "automation", 35),
    ("system-alert-list", "查看告警", "显示当前告警", "AlertTriangle", "alert", 40),
    ("system-analytics", "数据分析", "分析最近的数据趋势", "TrendingUp", "analytics", 30),
    ("system-agent-status", "Agent状态", "查看所有Agent运行状态", "Bot", "agent", 35),
    ("system-help", "帮助", "你能做什么", "Lightbulb", "general", 20),
)


def item(
    id_: str, label: str, prompt: str, icon: str, category: str, priority: int, context: str | None
) -> Item:
    out = {
        "id": id_,
        "label": label,
        "prompt": prompt,
        "icon": icon,
        "category": category,
        "priority": priority,
    }
    return out if context is None else {**out, "context": context}


def time_context(hour: int) -> str:
    if 5 <= hour <= 11:
        return "morning"
    if 12 <= hour <= 17:
        return "afternoon"
    return "evening" if 18 <= hour <= 22 else "night"


def icon_of(device_type: str) -> str:
    if any(k in device_type for k in ("sensor", "temperature", "humidity")):
        return "Cpu"
    if any(k in device_type for k in ("switch", "light", "plug")):
        return "Zap"
    return "Bot" if "camera" in device_type else "Cpu"


class TwinSuggestions:
    def __init__(self, world: World) -> None:
        self.world = world

    def suggestions(self, text: str, category: str | None, limit: int) -> Mapping[str, Any]:
        devices = automation_of(self.world).devices.list(1, 1_000_000, None, None).devices
        zone = zoneinfo.ZoneInfo(ServerSettings(self.world).timezone().timezone)
        when = time_context(datetime.fromtimestamp(self.world.now(), zone).hour)
        patterns = self._patterns()
        found = [
            *self._by_time(when, len(devices)),
            *self._by_devices(devices),
            *self._recent(),
            *patterns,
            *(item(*s, None) for s in SYSTEM),
        ]
        if category is not None:
            found = [s for s in found if s["category"] == category]
        if text:
            needle = text.lower()
            found = [s for s in found if needle in s["label"].lower() or needle in s["prompt"].lower()]
        found.sort(key=lambda s: -s.get("priority", 0))
        context = {
            "timestamp": int(self.world.now()),
            "learned_patterns_count": len(patterns),
            "device_count": len(devices),
            "time_context": when,
        }
        return {"suggestions": found[:limit], "context": context}

    @staticmethod
    def _by_time(when: str, count: int) -> list[Item]:
        if when == "morning" and count:
            return [
                item("time-morning-turn-on", f"打开所有设备 ({count}个设备)", "打开所有设备", "Zap",
                     "automation", 80, f"当前有{count}个设备"),
                item("time-morning-check-status", "检查设备状态", "所有设备状态如何", "Cpu", "device", 70,
                     "早上例行检查"),
            ]  # fmt: skip
        if when == "evening" and count:
            return [
                item("time-evening-turn-off", "关闭所有设备", "关闭所有不必要的设备", "Zap", "automation", 80,
                     "节能模式"),
                item("time-evening-security", "安全检查", "检查所有门窗传感器状态", "AlertTriangle", "alert",
                     75, "夜间安全"),
            ]  # fmt: skip
        if when == "afternoon":
            label, prompt = "查看今日数据", "显示今天的设备使用情况统计"
            return [
                item("time-afternoon-analytics", label, prompt, "TrendingUp", "analytics", 70, "数据统计")
            ]
        return []

    @staticmethod
    def _by_devices(devices: tuple[Any, ...]) -> list[Item]:
        if not devices:
            return [
                item("device-add-first", "添加第一个设备", "如何添加新设备", "Cpu", "device", 90, "开始使用")
            ]
        out = []
        for dtype, count in sorted(Counter(d.device_type for d in devices).items()):
            out.append(item(f"device-list-{dtype}", f"查看所有{dtype} ({count}个)", f"列出所有{dtype}",
                            icon_of(dtype), "device", 60, f"{count}个设备"))  # fmt: skip
            if any(k in dtype for k in ("temperature", "sensor", "humidity")):
                out.append(item(f"device-check-{dtype}", f"检查{dtype}读数", f"显示所有{dtype}的最新数据",
                                "TrendingUp", "analytics", 55, None))  # fmt: skip
        online = sum(1 for d in devices if d.online)
        if online < len(devices):
            label = f"检查离线设备 ({len(devices) - online}个)"
            out.append(item("device-offline-check", label, "哪些设备离线了", "AlertTriangle", "device", 70,
                            f"{online}/{len(devices)} 在线"))  # fmt: skip
        return out

    def _recent(self) -> list[Item]:
        sessions = automation_of(self.world).chat.list_sessions()
        if not sessions:
            return [
                item("recent-welcome", "新手入门指南", "你能做什么", "Lightbulb", "general", 85, "开始探索")
            ]
        titles = Counter(s.title for s in sessions[:10] if s.title)
        out: list[Item] = []
        for title, count in sorted(titles.items(), key=lambda kv: -kv[1])[:3]:
            if count > 1:
                out.append(item(f"recent-{len(out)}", f"再次: {title}", title, "History", "agent", 65,
                                f"使用了{count}次"))  # fmt: skip
        return out

    def _patterns(self) -> list[Item]:
        agents = automation_of(self.world).agents
        outcomes: list[str] = []
        for agent in agents.list_agents():
            entries = agents.memory(agent.id)["entries"]
            outcomes += [e["conclusion"] for e in entries[:3] if e["conclusion"]]
        unique = list(dict.fromkeys(outcomes))[:3]
        return [
            item(f"pattern-{i}", text, text, "History", "agent", 80, "置信度: 80%")
            for i, text in enumerate(unique)
        ]
