"""Names vulture cannot see used: called by a framework or registered, not called by name.

``vulture src/torchwheel tests/vulture_whitelist.py`` (tests/test_quality.py) must find no
dead code; each name here says who uses it.
"""

# ruff: noqa
from torchwheel import api
from torchwheel.analysis.reach import _Reader
from torchwheel.cli import _LazyGroup, _max_member_size, doctor, publish, read, rule, scan, symbols, tag
from torchwheel.cli.exits import EXITS, ExitRow
from torchwheel.cli.symbols import symbols_update
from torchwheel.net.fetch import _HTTP, _HTTPS, _TimedConnection, _TimedReader
from torchwheel.install.installing import _JournaledDestination
from torchwheel.net.pages import _Anchors
from torchwheel.publish.variant_plugin import FeatureConfig, TorchABIPlugin
from torchwheel.rules.explain import rules_page
from torchwheel.tables.symtable import SymbolTable, TorchWheelOrigin

_max_member_size.param  # click calls option callbacks with (ctx, param, value)
symbols_update  # a click command, registered on its group by the decorator
_LazyGroup.list_commands  # click.Group asks for the command names (help, completion)
_LazyGroup.get_command  # and for one command, which it then imports (cli.COMMANDS)
read.inspect  # the commands: named by "module:object" in cli.COMMANDS, imported when run
read.show
read.compat
read.check_command
tag.tag_command
symbols.include
rule.rule_command
publish.index_command
publish.matrix_command
publish.unlabel_command
scan.scan_command
doctor.doctor_command
api.__getattr__  # PEP 562: Python asks it for api.doctor, which is imported when first used
EXITS  # the exit-code table that docs/reference/exit-codes.md prints (tests/cli/test_exits.py holds them equal)
ExitRow.no
ExitRow.input
ExitRow.unfinished
_Anchors.handle_starttag  # html.parser.HTMLParser calls it
_JournaledDestination.write_to_fs  # installer's destination calls it for every file
_TimedReader.readable  # io.BufferedReader asks its raw stream
_TimedConnection.response_class  # http.client.HTTPConnection.getresponse builds it
_HTTP.http_open  # urllib's OpenerDirector calls <scheme>_open
_HTTPS.https_open
FeatureConfig.multi_value  # read by variantlib from the plugin's answer
TorchABIPlugin  # the variant_plugins entry point (pyproject.toml), loaded by variantlib
TorchABIPlugin.namespace
TorchABIPlugin.all_properties_compatible
TorchABIPlugin.get_all_configs
TorchABIPlugin.get_supported_configs
rules_page  # scripts/rules_doc.py writes docs/reference/rules.md from it (tests/test_rules_doc.py compares)
SymbolTable.from_json  # to_json's reader, for tables as text: the tests round-trip through it
TorchWheelOrigin.from_json  # scripts/shim_exports.py reads its cached export lists with it
__getattr__  # PEP 562: api's and results' Literal aliases, loaded when first asked for
_Reader.visit_TryStar  # ast.NodeVisitor calls visit_<node class>: try/except* blocks (analysis/reach)
from torchwheel.errors import REFERENCES

REFERENCES  # errors.py: the documented vocabulary of references (docs test, quality test); the Literal is the code's
