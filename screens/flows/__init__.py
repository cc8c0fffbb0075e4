"""The guided flows: *Add an SSD cache*, *Remove a cache* and *Plan only*, one step per module.

Each step is a screen pushed over the last (so Esc is Back) through the App's navigator; the
flow's state travels as a :class:`~screens.flows.model.Flow`."""
