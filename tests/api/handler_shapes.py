"""The device's response shapes, written from its Go handlers (``platform/platform-api/handlers``,
camthink-ai/neoruntime 04fc28cb) and the structs they serialise: one table per route family.

A shape is a dict of field -> type; a key ending in ``?`` is ``omitempty`` (absent when zero), every
other key must be present. A nested dict is a nested shape, ``[shape]`` a list of them. ``int`` is a
JSON integer (never a bool), ``float`` any JSON number, ``Any`` anything, ``OrNull(shape)`` the shape
or ``null`` (a Go slice, map or pointer that may be nil), ``MapOf(shape)`` an object of any keys whose
values have that shape (a Go map). Only ``data`` is described (the envelope is
the same everywhere)."""

from __future__ import annotations

from typing import Any

Shape = dict[str, Any]


class OrNull:
    """A value that is either ``shape`` or JSON ``null``."""

    def __init__(self, shape: Any) -> None:
        self.shape = shape


FACTORY: Shape = {
    "available": bool,
    "source?": str,
    "serial_number?": str,
    "mac_address?": str,
    "product_number?": str,
    "batch?": str,
    "hardware_revision?": str,
    "error?": str,
}

# handlers/device_info.go: DeviceInfo (a plain struct: no omitempty but where marked)
DEVICE: dict[str, Shape] = {
    "GET /api/v1/device-info": {
        "device_name": str,
        "model": str,
        "serial_number": str,
        "firmware_version": str,
        "build_date": str,
        "git_commit": str,
        "hardware_version": str,
        "os_version": str,
        "os_build_time": str,
        "distro": str,
        "kernel_version": str,
        "soc": {"vendor": str, "model": str, "core?": str, "npu?": str},
        "cpu": {"model": str, "cores": int, "frequency_mhz": float},
        "memory": {"total_gb": float, "used_gb": float, "used_percent": float},
        "camera_module": {"model": str, "i2c_bus?": int, "i2c_address?": str, "pixel_format?": int},
        "mac_address": str,
        "ip_address": str,
        "uptime": int,
        "uptime_formatted": str,
        "install_prefix": str,
        "ota": {"update_available": bool, "current_version": str, "latest_version?": str, "changelog?": str},
        "factory": FACTORY,
    },
    "GET /api/v1/device-info/factory": FACTORY,
}

# handlers/media.go: GetImageConfig and GetTransformConfig (gin.H: every key present)
MEDIA: dict[str, Shape] = {
    "GET /api/v1/media/image": {
        "manual_mode": bool,
        "brightness": int,
        "contrast": int,
        "saturation": int,
        "sharpness": int,
        "auto_exposure": bool,
        "backlight": int,
        "exposure_time_us": int,
        "gain": int,
        "noise_reduction": int,
        "wdr_value": int,
        "powerline_freq": int,
        "awb_index": int,
    },
    "GET /api/v1/media/transform": {
        "rotation": int,
        "flip": int,
        "dewarp": bool,
        "grayscale": bool,
        "dis": bool,
        "eis": bool,
    },
    # GetStreamStatus: the daemon's rows, ms_since_last_frame null for a stream with no frame yet
    "GET /api/v1/media/status": {
        "streams": [
            {
                "stream_id": str,
                "status": str,
                "has_encoder": bool,
                "codec": str,
                "width": int,
                "height": int,
                "fps": int,
                "bitrate_bps": int,
                "gop": int,
                "ms_since_last_frame": OrNull(int),
                "measured_fps": float,
                "status_detail": str,
            }
        ]
    },
    # GetProfile, ListProfiles (the proto's repeated string: null when empty)
    "GET /api/v1/media/profile": {"profile_name": str},
    "GET /api/v1/media/profiles": {"profiles": OrNull([str]), "current_profile": str},
    # GetOsdConfig's gin.H rows
    "GET /api/v1/media/osd": {
        "streams": [
            {
                "stream_name": str,
                "text_overlays": [
                    {
                        "id": str,
                        "text": str,
                        "x": float,
                        "y": float,
                        "font_size": float,
                        "text_color": int,
                        "h_align": int,
                        "v_align": int,
                        "enabled": bool,
                    }
                ],
                "datetime_overlays": [
                    {
                        "id": str,
                        "x": float,
                        "y": float,
                        "format": str,
                        "font_size": float,
                        "text_color": int,
                        "h_align": int,
                        "v_align": int,
                        "enabled": bool,
                    }
                ],
                "image_overlays": [
                    {
                        "id": str,
                        "image_path": str,
                        "image_size": int,
                        "x": float,
                        "y": float,
                        "width": float,
                        "height": float,
                        "h_align": int,
                        "v_align": int,
                        "enabled": bool,
                    }
                ],
            }
        ]
    },
    # GetPrivacyMaskConfig's gin.H
    "GET /api/v1/media/privacy-mask": {
        "enabled": bool,
        "color": int,
        "blur_radius": int,
        "regions": [{"id": str, "name": str, "enabled": bool, "points_x": [float], "points_y": [float]}],
        "dpm_enabled": bool,
        "dpm_labels": str,
        "dpm_mode": str,
        "dpm_color": int,
    },
}

# handlers/device.go: GetDeviceStatus, GetLensStatus, GetAutofocusStatus, GetDeviceCapabilities and the
# env/alarm answers are gin.H (every key present); GPIO reads pass device.proto's structs through
# encoding/json (every field omitempty; a GPIOReadResponse's status is a Status)
STATUS: Shape = {"success?": bool, "message?": str}
SWITCHED: Shape = {"success": bool, "enabled": bool, "message": str}
GPIO_READ: Shape = {"pin?": int, "value?": bool, "status?": STATUS, "direction?": str}
DEVICE_CONTROL: dict[str, Shape] = {
    "GET /api/v1/device/status": {
        "soc_temp_c": float,
        "mcu_temp_c": float,
        "light_sensor": int,
        "ptz_pan_pos": int,
        "ptz_tilt_pos": int,
        "zoom_pos": int,
        "focus_pos": int,
        "autofocus_enabled": bool,
        "ircut_mode": int,
        "white_light_level": int,
        "ir_led_level": int,
        "mcu_version": str,
        "mcu_uptime_ms": int,
    },
    "GET /api/v1/device/capabilities": dict.fromkeys(
        (
            "has_video",
            "has_codec",
            "has_led",
            "has_sensor",
            "has_mcu",
            "has_env_ctrl",
            "has_alarm",
            "has_rs485",
            "has_osd",
            "has_draw",
            "has_audio",
        ),
        bool,
    ),
    "GET /api/v1/device/gpio": {
        "available_pins?": [int],
        "input_pins?": [int],
        "output_pins?": [int],
        "results?": [GPIO_READ],
    },
    "GET /api/v1/device/gpio/21": GPIO_READ,
    "GET /api/v1/device/gpio/99": GPIO_READ,
    "GET /api/v1/device/fan": SWITCHED,
    "GET /api/v1/device/heat": SWITCHED,
    "GET /api/v1/device/radar": SWITCHED,
    "GET /api/v1/device/alarm-out/0": SWITCHED,
    "GET /api/v1/device/wiegand/1": SWITCHED,
    "GET /api/v1/device/alarm-outputs": {
        "success": bool,
        "message": str,
        "alarm_out0": bool,
        "alarm_out1": bool,
        "wiegand0": bool,
        "wiegand1": bool,
    },
}
LIMIT: Shape = {"min_pos": int, "max_pos": int}
LENS: dict[str, Shape] = {
    "GET /api/v1/device/lens/status": {
        "zoom_state": int,
        "focus_state": int,
        "zoom_rz_done": bool,
        "focus_rz_done": bool,
        "zoom_pos": int,
        "focus_pos": int,
        "iris_adc": int,
        "autofocus_enabled": bool,
        "zoom_limit": LIMIT,
        "focus_limit": LIMIT,
    },
    "GET /api/v1/device/lens/af/status": {
        "job_id": int,
        "operation": str,
        "state": str,
        "progress": float,
        "busy": bool,
        "anchor_valid": bool,
        "requested_ratio": float,
        "effective_ratio": float,
        "zoom_pos": int,
        "focus_pos": int,
        "best_focus": int,
        "metric": float,
        "confidence": float,
        "reproducibility": float,
        "estimated_distance_m": float,
        "elapsed_ms": int,
        "error_code": int,
        "message": str,
    },
}
AF_JOB: Shape = {"accepted": bool, "job_id": int, "message": str}
"""``OneshotAutofocus``/``StartZoomFollow``: gin.H."""
RS485: Shape = {"success": bool, "message": str}
"""The RS485 answers: gin.H."""

# handlers/audio.go: the device lists' and GetStatus' gin.H (every key present; volume a float32)
AUDIO_DEVICES: Shape = {"devices": [{"name": str, "description": str}]}
AUDIO: dict[str, Shape] = {
    "GET /api/v1/audio/capture-devices": AUDIO_DEVICES,
    "GET /api/v1/audio/playback-devices": AUDIO_DEVICES,
    "GET /api/v1/audio/status": {
        "capturing": bool,
        "playing": bool,
        "device": str,
        "sample_rate": int,
        "channels": int,
        "codec": str,
        "volume": float,
        "mute": bool,
        "playback_enabled": bool,
    },
}
MESSAGE: Shape = {"message": str}
"""The write answers that are ``gin.H{"message": …}``."""

LOG_FILE: Shape = {"path": str, "name": str, "size": int, "modified_time": str}
SERVICE: Shape = {"id": str, "name": str}

# handlers/log.go (LogFileInfo; GetServices) and handlers/debug_log.go (gin.H rows)
LOGS: dict[str, Shape] = {
    "GET /api/v1/logs/services": {"services": [SERVICE]},
    "GET /api/v1/logs/files": {"files": [{**LOG_FILE, "service?": str}]},
    "GET /api/v1/debug-logs/services": {"services": [SERVICE]},
    "GET /api/v1/debug-logs/files": {"files": [LOG_FILE]},
}

# handlers/app.go: ListApps (AppWithSyncedState, AppPermissions summaries) answers a bare array
APPS: dict[str, Shape] = {
    "GET /api/v1/apps": [
        {
            "id": str,
            "name": str,
            "version": str,
            "state": str,
            "container_id?": str,
            "pid?": int,
            "installed_at": int,
            "started_at": int,
            "stopped_at": int,
            "manifest_path": str,
            "instance_path": str,
            "permissions?": {
                "video?": [str],
                "inference?": {
                    "models?": [str],
                    "max_qps?": int,
                    "max_concurrent?": int,
                    "allow_register_model?": bool,
                },
                "events?": {"publish?": [str], "subscribe?": [str]},
                "device?": Any,
                "network?": Any,
            },
            "web_url?": str,
        }
    ],
}

# handlers/time.go: SystemTime; GetTimezones answers []TimezoneData
TIME: dict[str, Shape] = {
    "GET /api/v1/system/time": {
        "current_time": str,
        "unix_timestamp": int,
        "timezone": str,
        "uptime": int,
        "uptime_formatted": str,
    },
    "GET /api/v1/system/time/timezones": [{"name": str, "country": str, "offset": str, "offset_sec": int}],
}

# ai-runtime inference.proto SystemStats / InferenceStats (proto-JSON: every field omitempty)
AI_STATS: Shape = {
    "model_stats?": [
        {
            "model_id?": str,
            "total_inferences?": int,
            "total_errors?": int,
            "avg_latency_us?": int,
            "current_qps?": float,
            "queue_depth?": int,
            "hw_fps?": float,
        }
    ],
    "device_utilization?": float,
    "device_temperature?": float,
    "total_memory_bytes?": int,
    "used_memory_bytes?": int,
    "cpu_utilization?": float,
    "dsp_utilization?": float,
    "ram_total_kib?": int,
    "ram_used_kib?": int,
}

# handlers/handlers.go GetSystemInfo, GetSystemStats, HealthCheck (maps) and ai.go GetAIStats
SYSTEM: dict[str, Shape] = {
    "GET /api/v1/system/info": {
        "version": str,
        "services": {"ai-runtime": bool, "event-bus": bool, "device-control": bool, "app-manager": bool},
    },
    "GET /api/v1/system/stats": {"timestamp": int, "services": {"ai-runtime?": AI_STATS}},
    "GET /api/v1/system/health": {"status": str, "time": int, "service": str},
    "GET /api/v1/ai/stats": AI_STATS,
}


TENSOR_SPEC: Shape = {"shape?": [int], "dtype?": int, "name?": str, "layout?": str}
MODEL_FIELD: Shape = {
    "key": str,
    "type": str,
    "required": bool,
    "default": Any,
    "min?": float,
    "max?": float,
    "step?": float,
    "options?": [{"value": str, "label": str}],
}

# handlers/ai.go: GetCapabilities (model.SupportedFormats / SupportedModelTypes), ListModels
# (EnrichedModel), GetModelInfo (the DB record's gin.H, the runtime's fields once loaded), GetModelApps
AI: dict[str, Shape] = {
    "GET /api/v1/ai/capabilities": {
        "formats": [{"extension": str, "mime_type": str, "label": str}],
        "model_types": [{"id": str, "label": str, "fields": [MODEL_FIELD], "aliases?": [str]}],
    },
    "GET /api/v1/ai/models": {
        "models": [
            {
                "model_id": str,
                "name": str,
                "model_path": str,
                "version": str,
                "status": str,
                "source?": str,
                "owner_app_id?": str,
                "desired_state?": str,
                "load_timestamp?": int,
                "inputs?": [TENSOR_SPEC],
                "outputs?": [TENSOR_SPEC],
                "estimated_tops?": float,
                "estimated_memory?": int,
                "model_type?": str,
                "variant?": str,
                "threshold?": float,
                "max_detections?": int,
                "file_size?": int,
                "file_hash?": str,
                "network_name?": str,
                "input_width?": int,
                "input_height?": int,
                "used_by_apps?": [str],
            }
        ]
    },
    "GET /api/v1/ai/models/yolov8n": {
        "model_id": str,
        "name": str,
        "model_path": str,
        "status": str,
        "model_type": str,
        "variant": str,
        "threshold": float,
        "max_detections": int,
        "file_size": int,
        "network_name": str,
        "input_width": int,
        "input_height": int,
        "load_timestamp?": int,
        "inputs?": OrNull([TENSOR_SPEC]),
        "outputs?": OrNull([TENSOR_SPEC]),
        "estimated_tops?": float,
        "estimated_memory?": int,
    },
    "GET /api/v1/ai/models/yolov8n/apps": {"model_id": str, "apps": OrNull([str])},
    "GET /api/v1/ai/models/nothing-here/apps": {"model_id": str, "apps": OrNull([str])},
}


class MapOf:
    """A JSON object with any keys, every value of ``shape``."""

    def __init__(self, shape: Any) -> None:
        self.shape = shape


# handlers/event.go (the event bus's TopicListResponse, proto-JSON) and event_log.go (List's
# eventLogResponse rows, GetStatistics, GetTemplates' map of templateEntry by code)
EVENTS: dict[str, Shape] = {
    "GET /api/v1/events/topics": {
        "topics?": [
            {"topic?": str, "subscriber_count?": int, "total_messages?": int, "last_message_ts?": int}
        ]
    },
    "GET /api/v1/event-logs": {
        "total": int,
        "limit": int,
        "offset": int,
        "entries": [
            {
                "id": int,
                "event_id": str,
                "timestamp": str,
                "event_type": str,
                "level": str,
                "category": str,
                "source": str,
                "user?": str,
                "message": str,
                "message_zh": str,
                "data?": MapOf(Any),
                "created_at": str,
            }
        ],
    },
    "GET /api/v1/event-logs/statistics": dict.fromkeys(
        ("today_errors", "today_warnings", "today_critical", "operations", "system_events", "total_entries"),
        int,
    ),
    "GET /api/v1/event-logs/templates": {
        "templates": MapOf({"en": str, "zh": str, "module": str, "level": str, "params": OrNull([str])})
    },
}


# handlers/disk.go ListDisks: lsblk -b -J -o NAME,SIZE,TYPE,MOUNTPOINT,FSTYPE,MODEL,VENDOR, passed through
BLOCK: Shape = {
    "name": str,
    "size": int,
    "type": str,
    "mountpoint": OrNull(str),
    "fstype": OrNull(str),
    "model": OrNull(str),
    "vendor": OrNull(str),
}
STORAGE: dict[str, Shape] = {"GET /api/v1/storage/disks": {"blockdevices": [{**BLOCK, "children?": [BLOCK]}]}}


# handlers/file.go: List's fileEntry rows (directories first); the write answers as gin.H
FILE_ENTRY: Shape = {"name": str, "path": str, "is_dir": bool, "size": int, "mod_time": str, "mode": str}
FILES: dict[str, Shape] = {
    "GET /api/v1/files": {"path": str, "files": [FILE_ENTRY]},
    "GET /api/v1/files?path=/data": {"path": str, "files": [FILE_ENTRY]},
}
FILE_WRITES: dict[str, Shape] = {
    "POST /api/v1/files/content": {"path": str, "size": int},
    "GET /api/v1/files/content": {"path": str, "size": int, "content": str},
    "POST /api/v1/files/mkdir": {"path": str},
    "POST /api/v1/files/rename": {"old_path": str, "new_path": str},
    "POST /api/v1/files/upload": {"path": str, "size": int},
    "DELETE /api/v1/files": {"deleted": str},
    "POST /api/v1/files/batch-delete": {
        "deleted": [str],
        "count": int,
        "failed?": [{"path": str, "error": str}],
        "failed_count?": int,
    },
}


# handlers/container.go over the app manager's app.proto (proto-JSON: every field omitempty)
CONTAINER: Shape = {
    "id?": str,
    "name?": str,
    "image?": str,
    "runtime?": str,
    "status?": str,
    "state?": str,
    "pid?": int,
    "created_at?": str,
    "labels?": MapOf(str),
    "cpu_percent?": float,
    "memory_usage?": int,
}
CONTAINERS: dict[str, Shape] = {
    "GET /api/v1/containers": {
        "containers": [CONTAINER],
        "total": int,
        "page": int,
        "page_size": int,
        "status_count": {"all": int, "running": int, "stopped": int, "error": int},
    },
    "GET /api/v1/containers/aipc-object-detector": {
        "container": {
            "info?": CONTAINER,
            "spec_json?": str,
            "rootfs?": str,
            "snapshotter?": str,
            "mounts?": [Any],
            "env?": [str],
        }
    },
    "GET /api/v1/containers/aipc-object-detector/stats": {
        "stats": {
            "cpu_usage?": float,
            "cpu_percent?": float,
            "memory_usage?": int,
            "memory_limit?": int,
            "memory_percent?": float,
            "network_rx?": int,
            "network_tx?": int,
            "block_read?": int,
            "block_write?": int,
            "pids?": int,
        }
    },
    "GET /api/v1/containers/aipc-object-detector/logs": {"logs": OrNull([str])},
    "GET /api/v1/images": {
        "images": OrNull(
            [{"id?": str, "name?": str, "tags?": [str], "size?": int, "created_at?": int, "in_use?": bool}]
        )
    },
}


# handlers/monitor.go (gin.H maps over gopsutil; every key present but where marked)
NET_TOTALS: Shape = {"bytes_sent": int, "bytes_recv": int}
MONITOR: dict[str, Shape] = {
    "GET /api/v1/monitor/summary": {
        "cpu": {"usage_percent": float, "cores": int, "arch": str},
        "memory": {
            "total": int,
            "used": int,
            "available": int,
            "usage_percent": float,
            "swap_total": int,
            "swap_used": int,
        },
        "disk": {"total": int, "used": int, "free": int, "usage_percent": float, "mountpoint?": str},
        "host": {
            "hostname": str,
            "os": str,
            "platform": str,
            "platform_version": str,
            "kernel_version": str,
            "kernel_arch": str,
            "uptime_seconds": int,
        },
        "network?": NET_TOTALS,
        "npu": float,
    },
    "GET /api/v1/monitor/cpu": {
        "total_percent": float,
        "core_count": int,
        "cores": [{"model": str, "mhz": float, "usage_percent?": float}],
    },
    "GET /api/v1/monitor/memory": {
        "virtual": {
            "total": int,
            "used": int,
            "available": int,
            "free": int,
            "usage_percent": float,
            "buffers": int,
            "cached": int,
        },
        "swap": {"total": int, "used": int, "free": int, "usage_percent": float},
    },
    "GET /api/v1/monitor/disk": {
        "partitions": [
            {
                "device": str,
                "mountpoint": str,
                "fstype": str,
                "total": int,
                "used": int,
                "free": int,
                "usage_percent": float,
                "is_system": bool,
                "is_removable": bool,
                "is_protected": bool,
                "mountpoint_label": str,
            }
        ]
    },
    "GET /api/v1/monitor/network": {
        "interfaces": [
            {
                "name": str,
                "bytes_sent": int,
                "bytes_recv": int,
                "packets_sent": int,
                "packets_recv": int,
                "errin": int,
                "errout": int,
            }
        ]
    },
    "GET /api/v1/monitor/snapshot": {
        "timestamp": int,
        "cpu": float,
        "memory": float,
        "npu": float,
        "temperatures": {"cpu": float, "npu": float, "board": float},
        "network?": NET_TOTALS,
    },
}


# handlers/process.go: List's procInfo rows; GetInfo's gin.H (gopsutil: status a list, create_time in ms)
PROC: Shape = {
    "pid": int,
    "name": str,
    "status": str,
    "cpu_percent": float,
    "mem_percent": float,
    "mem_rss": int,
    "username": str,
    "cmdline": str,
}
PROCESSES: dict[str, Shape] = {
    "GET /api/v1/processes": {"total": int, "processes": [PROC]},
    "GET /api/v1/processes/1": {
        **PROC,
        "status": [str],
        "ppid": int,
        "cwd": str,
        "exe": str,
        "create_time": int,
        "num_threads": int,
        "mem_rss?": int,
        "mem_vms?": int,
    },
}


# handlers/network.go (NetworkConfig; GetInterfaces' NetworkInterfaceInfo rows: dns nil off the default
# route), settings.go (a map of strings) and ssh.go (parsed sshd_config; systemctl is-active; journal lines)
NETWORK_SETTINGS_SSH: dict[str, Shape] = {
    "GET /api/v1/network/config": dict.fromkeys(
        ("interface", "mode", "ip_address", "subnet_mask", "gateway", "dns1", "dns2", "mac_address"), str
    ),
    "GET /api/v1/network/interfaces": {
        "interfaces": [
            {
                "name": str,
                "ip_address": str,
                "subnet_mask": str,
                "mac_address": str,
                "status": str,
                "is_default": bool,
                "gateway": str,
                "dns": OrNull([str]),
            }
        ]
    },
    "GET /api/v1/settings": {"settings": MapOf(str)},
    "GET /api/v1/ssh/config": {"config": MapOf(str)},
    "GET /api/v1/ssh/status": {"status": str},
    "GET /api/v1/ssh/logs": {"logs": OrNull([str]), "error?": str},
}


# handlers/store.go over model/store.go's gorm structs (no omitempty; times RFC 3339)
STAMPS: Shape = {"created_at": str, "updated_at": str}
STORE_TAG: Shape = {"id": int, "key": str, "name": str, "name_zh": str, "sort": int, **STAMPS}
STORE_APP: Shape = {
    "id": int,
    **dict.fromkeys(("key", "name", "name_zh", "icon", "short_desc", "short_desc_zh", "description"), str),
    **dict.fromkeys(("category", "author", "website", "document", "architectures"), str),
    "min_memory": int,
    "gpu_required": bool,
    "soc_support": str,
    "source": str,
    "status": str,
    "featured": bool,
    "sort_order": int,
    "downloads": int,
    "rating": float,
    **STAMPS,
}
STORE_DETAIL: Shape = {
    "id": int,
    "app_id": int,
    **dict.fromkeys(("version", "image", "default_config", "changelog", "status", "release_date"), str),
    **STAMPS,
}
STORE: dict[str, Shape] = {
    "GET /api/v1/store/apps": {
        "apps": [{**STORE_APP, "tags": OrNull([STORE_TAG])}],
        "total": int,
        "page": int,
        "page_size": int,
    },
    "GET /api/v1/store/categories": {
        "categories": OrNull(
            [{"id": int, "key": str, "name": str, "name_zh": str, "icon": str, "sort": int, **STAMPS}]
        )
    },
    "GET /api/v1/store/tags": {"tags": OrNull([STORE_TAG])},
    "GET /api/v1/store/installs": {
        "installs": [
            {
                "id": int,
                "store_app_id": OrNull(int),
                "app_detail_id": OrNull(int),
                **dict.fromkeys(("app_id", "name", "version", "description", "image", "status"), str),
                "container_id": str,
                "pid": int,
                "message": str,
                "manifest_path": str,
                "config": str,
                **dict.fromkeys(("installed_at", "started_at", "stopped_at"), str),
                **STAMPS,
                "store_app?": STORE_APP,
            }
        ],
        "total": int,
    },
}


# handlers/dev.go over model/dev.go's gorm structs (no omitempty; a build's started/finished *time.Time)
BASE_IMAGE: Shape = {
    "id": int,
    **dict.fromkeys(("name", "tag", "image", "language", "description", "desc_zh", "sdk_version"), str),
    **dict.fromkeys(("features", "build_cmd", "entry_point", "status"), str),
    **STAMPS,
}
PROJECT: Shape = {
    "id": int,
    **dict.fromkeys(("name", "key", "description"), str),
    "base_image_id": int,
    **dict.fromkeys(("language", "source_path", "entry_file", "build_config", "app_config", "volumes"), str),
    **dict.fromkeys(("status", "build_image", "message"), str),
    **STAMPS,
}
BUILD: Shape = {
    "id": int,
    "project_id": int,
    **dict.fromkeys(("version", "status", "log", "image"), str),
    "image_size": int,
    "started_at": OrNull(str),
    "finished_at": OrNull(str),
    "created_at": str,
}
DEV: dict[str, Shape] = {
    "GET /api/v1/dev/base-images": {"images": OrNull([BASE_IMAGE])},
    "GET /api/v1/dev/projects": {"projects": OrNull([PROJECT])},
}
DEV_PROJECT: Shape = {"project": PROJECT, "base_image": OrNull(BASE_IMAGE), "builds": OrNull([BUILD])}


def mismatches(value: Any, shape: Any, path: str = "data") -> list[str]:
    """Every way ``value`` differs from ``shape`` (empty when it matches)."""
    if isinstance(shape, OrNull):
        return [] if value is None else mismatches(value, shape.shape, path)
    if isinstance(shape, MapOf):
        if not isinstance(value, dict):
            return [f"{path}: expected an object, got {type(value).__name__}"]
        return [m for k, v in value.items() for m in mismatches(v, shape.shape, f"{path}.{k}")]
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return [f"{path}: expected an object, got {type(value).__name__}"]
        keys = {k.rstrip("?"): k.endswith("?") for k in shape}
        out = [f"{path}.{k}: not in the handler's struct" for k in value if k not in keys]
        out += [f"{path}.{k}: missing" for k, optional in keys.items() if not optional and k not in value]
        for key, sub in shape.items():
            name = key.rstrip("?")
            if name in value:
                out += mismatches(value[name], sub, f"{path}.{name}")
        return out
    if isinstance(shape, list):
        if not isinstance(value, list):
            return [f"{path}: expected a list, got {type(value).__name__}"]
        return [m for i, item in enumerate(value) for m in mismatches(item, shape[0], f"{path}[{i}]")]
    if shape is Any:
        return []
    if shape is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif shape is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, shape)
    return [] if ok else [f"{path}: expected {shape.__name__}, got {type(value).__name__} {value!r}"]
