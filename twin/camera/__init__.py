"""The AI camera: the device as its edge gateway sees it, and every part of it (optics, peripherals,
video, partitions, containers and apps, AI runtime, OTA and OS upgrade). ``camera.py`` assembles
the parts; the ``gateway*`` modules serve them to the API layer through the ports."""
