"""The built-in plugins and actions, by the names configurations use: one explicit list, as
kube-scheduler's ``NewInTreeRegistry`` (importing a module registers nothing). A new plugin is one
module under ``plugins/`` and one line here."""

from __future__ import annotations

from pumice.scheduler.actions.allocate import AllocateAction
from pumice.scheduler.actions.backfill import BackfillAction
from pumice.scheduler.actions.enqueue import EnqueueAction
from pumice.scheduler.actions.gangpreempt import GangPreemptAction
from pumice.scheduler.actions.gangreclaim import GangReclaimAction
from pumice.scheduler.actions.preempt import PreemptAction
from pumice.scheduler.actions.reclaim import ReclaimAction
from pumice.scheduler.actions.shuffle import ShuffleAction
from pumice.scheduler.framework.plugin import Action, Plugin
from pumice.scheduler.plugins.binpack import BinpackPlugin
from pumice.scheduler.plugins.capacity import CapacityPlugin
from pumice.scheduler.plugins.cdp import CdpPlugin
from pumice.scheduler.plugins.conformance import ConformancePlugin
from pumice.scheduler.plugins.deviceshare import DeviceSharePlugin
from pumice.scheduler.plugins.drf import DrfPlugin
from pumice.scheduler.plugins.extender import ExtenderPlugin
from pumice.scheduler.plugins.fragmentation import FragmentationPlugin
from pumice.scheduler.plugins.gang import GangPlugin
from pumice.scheduler.plugins.network_topology_aware import NetworkTopologyAwarePlugin
from pumice.scheduler.plugins.nodegroup import NodeGroupPlugin
from pumice.scheduler.plugins.nodeorder import NodeOrderPlugin
from pumice.scheduler.plugins.numa_aware import NumaAwarePlugin
from pumice.scheduler.plugins.overcommit import OvercommitPlugin
from pumice.scheduler.plugins.pdb import PdbPlugin
from pumice.scheduler.plugins.predicates import PredicatesPlugin
from pumice.scheduler.plugins.priority import PriorityPlugin
from pumice.scheduler.plugins.proportion import ProportionPlugin
from pumice.scheduler.plugins.rescheduling import ReschedulingPlugin
from pumice.scheduler.plugins.resource_strategy_fit import ResourceStrategyFitPlugin
from pumice.scheduler.plugins.resourcequota import ResourceQuotaPlugin
from pumice.scheduler.plugins.sla import SlaPlugin
from pumice.scheduler.plugins.task_topology import TaskTopologyPlugin
from pumice.scheduler.plugins.tdm import TdmPlugin
from pumice.scheduler.plugins.usage import UsagePlugin

PLUGINS: dict[str, type[Plugin]] = {plugin.name: plugin for plugin in (
    PriorityPlugin,
    GangPlugin,
    ConformancePlugin,
    DrfPlugin,
    ProportionPlugin,
    CapacityPlugin,
    PredicatesPlugin,
    NodeOrderPlugin,
    BinpackPlugin,
    OvercommitPlugin,
    SlaPlugin,
    NetworkTopologyAwarePlugin,
    NodeGroupPlugin,
    ResourceStrategyFitPlugin,
    ResourceQuotaPlugin,
    TdmPlugin,
    CdpPlugin,
    DeviceSharePlugin,
    FragmentationPlugin,
    PdbPlugin,
    ReschedulingPlugin,
    TaskTopologyPlugin,
    ExtenderPlugin,
    NumaAwarePlugin,
    UsagePlugin,
)}

ACTIONS: dict[str, type[Action]] = {action.name: action for action in (
    EnqueueAction,
    AllocateAction,
    BackfillAction,
    PreemptAction,
    ReclaimAction,
    ShuffleAction,
    GangPreemptAction,
    GangReclaimAction,
)}
