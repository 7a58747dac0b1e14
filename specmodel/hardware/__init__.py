"""Hardware: decoder shapes (:mod:`.shape`), device presets (:mod:`.devices`) and the
analytical cost of a forward on a device (:mod:`.costmodel`)."""
