"""Names vulture cannot see used: called by a framework or registered, not called by name.

``vulture src/torchwheel tests/vulture_whitelist.py`` (tests/test_quality.py) must find no
dead code; each name here says who uses it.
"""

# ruff: noqa
from torchwheel.cli import _max_member_size
from torchwheel.cli.symbols import symbols_update
from torchwheel.install.discovery import _Links
from torchwheel.install.variant_plugin import FeatureConfig, TorchABIPlugin
from torchwheel.rules import cpython, integrity, marker, release, requirements, torch

_max_member_size.param  # click calls option callbacks with (ctx, param, value)
symbols_update  # a click command, registered on its group by the decorator
_Links.handle_starttag  # html.parser.HTMLParser calls it
FeatureConfig.multi_value  # read by variantlib from the plugin's answer
TorchABIPlugin  # the variant_plugins entry point (pyproject.toml), loaded by variantlib
TorchABIPlugin.namespace
TorchABIPlugin.all_properties_compatible
TorchABIPlugin.get_all_configs
TorchABIPlugin.get_supported_configs
# every check is registered by @rule(CODE) and run through rules.REGISTRY
cpython.abi3_not_limited
cpython.suffix_tag_mismatch
cpython.limited_above_floor
cpython.hook_missing
cpython.abi3t_needs_modexport
cpython.pure_tag
integrity.record_missing
integrity.record_mismatch
integrity.record_incomplete
integrity.tags_disagree
integrity.platform_mismatch
integrity.binary_unreadable
integrity.metadata_invalid
integrity.dist_info_mismatch
integrity.metadata_mismatch
integrity.torch_abi_invalid
integrity.member_name_uninstallable
integrity.facts_file_invalid
marker.hidden
marker.unknown_schema
marker.disagree
marker.targets_differ
release.requirements_differ
release.targets_differ
release.stable_and_unstable
requirements.too_tight
requirements.too_loose
requirements.unstable_unpinned
torch.target_too_old
torch.unstable_in_stable
torch.unknown_shims
torch.unstable_library
torch.stale_allowlist
