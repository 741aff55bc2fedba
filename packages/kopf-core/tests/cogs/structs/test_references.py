"""
Resources, selectors, and namespace patterns: as the manual's "Resource specification" and "Scopes" describe.

The resources are built by hand as the discovery would produce them; nothing is mocked.
"""
from typing import Any, Dict, Optional

import pytest

from kopf._cogs.structs.namespaces import iter_namespace_matches, match_namespace, select_specific_namespaces
from kopf._cogs.structs.references import EVERYTHING, Resource, Selector

KOPFEXAMPLES = Resource(
    'kopf.dev', 'v1', 'kopfexamples', kind='KopfExample', singular='kopfexample',
    shortcuts=frozenset({'kex'}), categories=frozenset({'all', 'kopf'}), namespaced=True)
KOPFEXAMPLES_V1BETA1 = Resource(
    'kopf.dev', 'v1beta1', 'kopfexamples', kind='KopfExample', singular='kopfexample',
    shortcuts=frozenset({'kex'}), namespaced=True, preferred=False)
PODS = Resource(
    '', 'v1', 'pods', kind='Pod', singular='pod', shortcuts=frozenset({'po'}),
    categories=frozenset({'all'}), namespaced=True, subresources=frozenset({'status', 'log'}))
METRICS_PODS = Resource(
    'metrics.k8s.io', 'v1beta1', 'pods', kind='PodMetrics', singular='', namespaced=True)
EVENTS = Resource('', 'v1', 'events', kind='Event', singular='event', shortcuts=frozenset({'ev'}), namespaced=True)
NEW_EVENTS = Resource('events.k8s.io', 'v1', 'events', kind='Event', singular='event', namespaced=True)
DEPLOYMENTS = Resource('apps', 'v1', 'deployments', kind='Deployment', singular='deployment',
                       shortcuts=frozenset({'deploy'}), categories=frozenset({'all'}), namespaced=True)
NAMESPACES = Resource('', 'v1', 'namespaces', kind='Namespace', singular='namespace', namespaced=False)
WIDGETS_A = Resource('a.example.com', 'v1', 'widgets', kind='Widget', singular='widget', namespaced=True)
WIDGETS_B = Resource('b.example.com', 'v1', 'widgets', kind='Widget', singular='widget', namespaced=True)

ALL = [KOPFEXAMPLES, KOPFEXAMPLES_V1BETA1, PODS, METRICS_PODS, EVENTS, NEW_EVENTS, DEPLOYMENTS,
       NAMESPACES, WIDGETS_A, WIDGETS_B]


# Resources: names and URLs.

def test_resource_repr_is_plural_version_group() -> None:
    assert repr(KOPFEXAMPLES) == 'kopfexamples.v1.kopf.dev'


def test_core_resource_repr_has_no_group() -> None:
    assert repr(PODS) == 'pods.v1'


@pytest.mark.parametrize('resource, expected', [
    pytest.param(KOPFEXAMPLES, 'kopf.dev/v1', id='grouped'),
    pytest.param(PODS, 'v1', id='core'),
])
def test_api_version_is_group_slash_version_or_version_alone(resource: Resource, expected: str) -> None:
    assert resource.api_version == expected


@pytest.mark.parametrize('kwargs, expected', [
    pytest.param({}, '/apis/kopf.dev/v1/kopfexamples', id='cluster-wide-list'),
    pytest.param({'namespace': 'ns1'}, '/apis/kopf.dev/v1/namespaces/ns1/kopfexamples', id='namespace-list'),
    pytest.param({'namespace': 'ns1', 'name': 'kex1'},
                 '/apis/kopf.dev/v1/namespaces/ns1/kopfexamples/kex1', id='namespaced-object'),
    pytest.param({'namespace': 'ns1', 'name': 'kex1', 'subresource': 'status'},
                 '/apis/kopf.dev/v1/namespaces/ns1/kopfexamples/kex1/status', id='subresource'),
    pytest.param({'server': 'https://localhost:6443/', 'namespace': 'ns1'},
                 'https://localhost:6443/apis/kopf.dev/v1/namespaces/ns1/kopfexamples', id='with-server'),
])
def test_url_of_a_namespaced_custom_resource(kwargs: Any, expected: str) -> None:
    assert KOPFEXAMPLES.get_url(**kwargs) == expected


@pytest.mark.parametrize('kwargs, expected', [
    pytest.param({}, '/api/v1/pods', id='cluster-wide-list'),
    pytest.param({'namespace': 'ns1'}, '/api/v1/namespaces/ns1/pods', id='namespace-list'),
    pytest.param({'namespace': 'ns1', 'name': 'pod1', 'subresource': 'log'},
                 '/api/v1/namespaces/ns1/pods/pod1/log', id='subresource'),
])
def test_url_of_a_core_resource_has_api_prefix_and_no_group(kwargs: Any, expected: str) -> None:
    assert PODS.get_url(**kwargs) == expected


@pytest.mark.parametrize('kwargs, expected', [
    pytest.param({}, '/api/v1/namespaces', id='list'),
    pytest.param({'name': 'ns1'}, '/api/v1/namespaces/ns1', id='object'),
    pytest.param({'name': 'ns1', 'subresource': 'status'}, '/api/v1/namespaces/ns1/status', id='subresource'),
])
def test_url_of_a_cluster_scoped_resource_has_no_namespace(kwargs: Any, expected: str) -> None:
    assert NAMESPACES.get_url(**kwargs) == expected


def test_url_query_params_are_escaped() -> None:
    url = PODS.get_url(namespace='ns1', params={'labelSelector': 'app in (a,b),!x', 'watch': 'true'})
    assert url == '/api/v1/namespaces/ns1/pods?labelSelector=app+in+%28a%2Cb%29%2C%21x&watch=true'


def test_url_with_a_subresource_but_no_name_is_refused() -> None:
    with pytest.raises(ValueError, match=r"Subresources can be used only with specific resources"):
        KOPFEXAMPLES.get_url(namespace='ns1', subresource='status')


def test_url_of_a_cluster_scoped_resource_in_a_namespace_is_refused() -> None:
    with pytest.raises(ValueError, match=r"not supported for cluster-scoped resources"):
        NAMESPACES.get_url(namespace='ns1', name='x')


def test_url_of_a_specific_namespaced_object_without_a_namespace_is_refused() -> None:
    with pytest.raises(ValueError, match=r"need a namespace"):
        KOPFEXAMPLES.get_url(name='kex1')


# Selectors: the notations.

@pytest.mark.parametrize('args, group, version, name', [
    pytest.param(('kopf.dev', 'v1', 'kopfexamples'), 'kopf.dev', 'v1', 'kopfexamples', id='group-version-name'),
    pytest.param(('kopf.dev/v1', 'kopfexamples'), 'kopf.dev', 'v1', 'kopfexamples', id='groupversion-name'),
    pytest.param(('apps', 'v1', 'deployments'), 'apps', 'v1', 'deployments', id='apps-separate'),
    pytest.param(('apps/v1', 'deployments'), 'apps', 'v1', 'deployments', id='apps-slashed'),
    pytest.param(('', 'v1', 'pods'), '', 'v1', 'pods', id='empty-group-v1'),
    pytest.param(('v1', 'pods'), '', 'v1', 'pods', id='v1-is-core'),
    pytest.param(('kopf.dev', 'kopfexamples'), 'kopf.dev', None, 'kopfexamples', id='group-only'),
    pytest.param(('apps', 'deployments'), 'apps', None, 'deployments', id='apps-group-only'),
    pytest.param(('kopfexamples.kopf.dev',), 'kopf.dev', None, 'kopfexamples', id='plural-dot-group'),
    pytest.param(('deployments.apps',), 'apps', None, 'deployments', id='kubectl-apps'),
    pytest.param(('pods.metrics.k8s.io',), 'metrics.k8s.io', None, 'pods', id='kubectl-dotted-group'),
    pytest.param(('kopfexamples.v1.kopf.dev',), 'kopf.dev', 'v1', 'kopfexamples', id='plural-version-group'),
    pytest.param(('pods.v1',), '', 'v1', 'pods', id='kubectl-core-v1'),
    pytest.param(('kopfexamples',), None, None, 'kopfexamples', id='name-only'),
    pytest.param(('KopfExample',), None, None, 'KopfExample', id='kind-as-name'),
])
def test_positional_notations(args: Any, group: Optional[str], version: Optional[str], name: str) -> None:
    selector = Selector(*args)
    assert selector.group == group
    assert selector.version == version
    assert selector.any_name == name


@pytest.mark.parametrize('args, group, version', [
    pytest.param(('kopf.dev', 'v1', EVERYTHING), 'kopf.dev', 'v1', id='group-version'),
    pytest.param(('kopf.dev/v1', EVERYTHING), 'kopf.dev', 'v1', id='groupversion'),
    pytest.param(('kopf.dev', EVERYTHING), 'kopf.dev', None, id='group'),
    pytest.param((EVERYTHING,), None, None, id='alone'),
])
def test_everything_marker_as_the_rightmost_value(args: Any, group: Optional[str], version: Optional[str]) -> None:
    selector = Selector(*args)
    assert selector.group == group
    assert selector.version == version
    assert selector.any_name is EVERYTHING


@pytest.mark.parametrize('args, kwargs, group, version', [
    pytest.param(('kopfexamples',), {'group': 'kopf.dev', 'version': 'v1'}, 'kopf.dev', 'v1', id='name-only'),
    pytest.param(('kopf.dev', 'kopfexamples'), {'version': 'v1beta1'}, 'kopf.dev', 'v1beta1', id='group-only'),
    pytest.param(('kopfexamples.kopf.dev',), {'version': 'v1'}, 'kopf.dev', 'v1', id='plural-dot-group'),
    pytest.param(('kopf.dev/kopfexamples',), {'version': 'v1'}, 'kopf.dev', 'v1', id='group-slash-name'),
    pytest.param((EVERYTHING,), {'group': 'apps'}, 'apps', None, id='everything'),
])
def test_keywords_give_what_the_positionals_do_not(
        args: Any, kwargs: Any, group: Optional[str], version: Optional[str]) -> None:
    selector = Selector(*args, **kwargs)
    assert selector.group == group
    assert selector.version == version
    assert selector.check(KOPFEXAMPLES_V1BETA1) == (version == 'v1beta1')


@pytest.mark.parametrize('args, kwargs', [
    pytest.param(('kopf.dev', 'v1', 'kopfexamples'), {'group': 'kopf.dev', 'version': 'v1'}, id='group-version'),
    pytest.param(('v1', 'pods'), {'group': ''}, id='core-group'),
    pytest.param(('kopfexamples',), {'any_name': 'kopfexamples'}, id='name'),
])
def test_keywords_the_same_as_the_positionals_are_accepted(args: Any, kwargs: Any) -> None:
    assert Selector(*args, **kwargs) == Selector(*args)


@pytest.mark.parametrize('args, kwargs', [
    pytest.param(('kopf.dev', 'v1', 'kopfexamples'), {'group': 'apps'}, id='group-of-three'),
    pytest.param(('kopf.dev', 'v1', 'kopfexamples'), {'version': 'v2'}, id='version-of-three'),
    pytest.param(('kopf.dev/v1', 'kopfexamples'), {'version': 'v2'}, id='version-of-slashed'),
    pytest.param(('v1', 'pods'), {'group': 'apps'}, id='core-group'),
    pytest.param(('deployments.apps',), {'group': 'extensions'}, id='kubectl-group'),
    pytest.param(('pods',), {'any_name': 'deployments'}, id='name'),
])
def test_keywords_that_contradict_the_positionals_are_refused(args: Any, kwargs: Any) -> None:
    with pytest.raises(TypeError, match=r"contradictory"):
        Selector(*args, **kwargs)


@pytest.mark.parametrize('kwarg', ['kind', 'plural', 'singular', 'shortcut', 'category'])
def test_specific_name_kwargs_are_remembered_as_such(kwarg: str) -> None:
    kwargs: Dict[str, Any] = {kwarg: 'x'}
    selector = Selector(**kwargs)
    assert getattr(selector, kwarg) == 'x'
    assert selector.any_name is None


@pytest.mark.parametrize('args, kwargs', [
    pytest.param(('kopfexamples',), {'kind': 'KopfExample'}, id='positional-and-kind'),
    pytest.param((), {'kind': 'KopfExample', 'plural': 'kopfexamples'}, id='kind-and-plural'),
    pytest.param((), {'singular': 'kopfexample', 'shortcut': 'kex'}, id='singular-and-shortcut'),
    pytest.param((EVERYTHING,), {'category': 'all'}, id='everything-and-category'),
])
def test_several_names_are_refused_as_ambiguous(args: Any, kwargs: Any) -> None:
    with pytest.raises(TypeError, match=r"Ambiguous resource specification"):
        Selector(*args, **kwargs)


@pytest.mark.parametrize('args, kwargs', [
    pytest.param((), {}, id='nothing'),
    pytest.param((), {'group': 'kopf.dev', 'version': 'v1'}, id='group-version-kwargs'),
])
def test_no_names_are_refused(args: Any, kwargs: Any) -> None:
    with pytest.raises(TypeError, match=r"Unspecific resource with no names"):
        Selector(*args, **kwargs)


def test_api_specification_alone_is_refused() -> None:
    with pytest.raises(TypeError, match=r"Resource name is missing"):
        Selector('kopf.dev/v1')


@pytest.mark.parametrize('args', [
    pytest.param((EVERYTHING, 'kopfexamples'), id='everything-leftmost-of-two'),
    pytest.param((EVERYTHING, 'v1', 'kopfexamples'), id='everything-leftmost-of-three'),
    pytest.param(('kopf.dev', EVERYTHING, 'kopfexamples'), id='everything-in-the-middle'),
    pytest.param(('kopf.dev/v1', 'v1', 'kopfexamples'), id='slashed-with-three'),
])
def test_misplaced_positionals_are_refused(args: Any) -> None:
    with pytest.raises(TypeError):
        Selector(*args)


# Selectors: matching the names.

@pytest.mark.parametrize('selector', [
    pytest.param(Selector('kopfexamples'), id='plural'),
    pytest.param(Selector('kopfexample'), id='singular'),
    pytest.param(Selector('KopfExample'), id='kind'),
    pytest.param(Selector('kex'), id='shortcut'),
    pytest.param(Selector(kind='KopfExample'), id='kind-kwarg'),
    pytest.param(Selector(plural='kopfexamples'), id='plural-kwarg'),
    pytest.param(Selector(singular='kopfexample'), id='singular-kwarg'),
    pytest.param(Selector(shortcut='kex'), id='shortcut-kwarg'),
    pytest.param(Selector(category='kopf'), id='category-kwarg'),
    pytest.param(Selector('kopf.dev', 'v1', 'kopfexamples'), id='fully-specified'),
    pytest.param(Selector('kopfexamples.kopf.dev'), id='kubectl-like'),
])
def test_any_of_the_names_matches(selector: Selector) -> None:
    assert selector.check(KOPFEXAMPLES)


@pytest.mark.parametrize('selector', [
    pytest.param(Selector(kind='kopfexamples'), id='plural-as-kind'),
    pytest.param(Selector(plural='KopfExample'), id='kind-as-plural'),
    pytest.param(Selector(singular='kex'), id='shortcut-as-singular'),
    pytest.param(Selector(shortcut='kopfexample'), id='singular-as-shortcut'),
    pytest.param(Selector(category='other'), id='other-category'),
    pytest.param(Selector('zalando.org', 'kopfexamples'), id='other-group'),
    pytest.param(Selector('kopf.dev', 'v2', 'kopfexamples'), id='other-version'),
    pytest.param(Selector('KOPFEXAMPLES'), id='case-sensitive'),
])
def test_other_names_do_not_match(selector: Selector) -> None:
    assert not selector.check(KOPFEXAMPLES)


def test_non_preferred_versions_do_not_match_when_no_version_is_given() -> None:
    assert Selector('kopf.dev', 'kopfexamples').select(ALL) == {KOPFEXAMPLES}


def test_non_preferred_versions_match_when_named_explicitly() -> None:
    assert Selector('kopf.dev', 'v1beta1', 'kopfexamples').select(ALL) == {KOPFEXAMPLES_V1BETA1}


def test_core_v1_has_priority_over_same_named_resources_of_other_groups() -> None:
    assert Selector('pods').select(ALL) == {PODS}


def test_other_groups_are_served_when_named() -> None:
    assert Selector('pods.metrics.k8s.io').select(ALL) == {METRICS_PODS}


def test_same_name_in_several_non_core_groups_selects_nothing() -> None:
    assert Selector('widgets').select(ALL) == set()


def test_same_name_in_several_non_core_groups_is_ambiguous() -> None:
    assert Selector('widgets').is_ambiguous(ALL)


def test_core_v1_priority_is_not_ambiguous() -> None:
    assert not Selector('pods').is_ambiguous(ALL)


def test_unmatched_selector_is_not_ambiguous() -> None:
    assert not Selector('nonexistent').is_ambiguous(ALL)


def test_same_name_with_a_group_is_not_ambiguous() -> None:
    assert Selector('a.example.com', 'widgets').select(ALL) == {WIDGETS_A}


def test_categories_serve_several_groups_without_ambiguity() -> None:
    selector = Selector(category='all')
    assert selector.select(ALL) == {KOPFEXAMPLES, PODS, DEPLOYMENTS}
    assert not selector.is_ambiguous(ALL)


def test_everything_serves_all_preferred_resources_except_events() -> None:
    selected = Selector(EVERYTHING).select(ALL)
    assert selected == {KOPFEXAMPLES, PODS, METRICS_PODS, DEPLOYMENTS, NAMESPACES, WIDGETS_A, WIDGETS_B}


def test_new_events_are_served_when_named_explicitly() -> None:
    assert Selector('events.k8s.io', 'events').select(ALL) == {NEW_EVENTS}


def test_everything_in_a_group_serves_only_that_group() -> None:
    assert Selector('kopf.dev', EVERYTHING).select(ALL) == {KOPFEXAMPLES}


def test_core_v1_events_are_served_when_named_explicitly() -> None:
    assert Selector('v1', 'events').select(ALL) == {EVENTS}


def test_everything_is_not_specific() -> None:
    assert not Selector(EVERYTHING).is_specific


def test_category_is_not_specific() -> None:
    assert not Selector(category='all').is_specific


@pytest.mark.parametrize('selector', [
    pytest.param(Selector('pods'), id='any-name'),
    pytest.param(Selector(kind='Pod'), id='kind'),
    pytest.param(Selector(plural='pods'), id='plural'),
    pytest.param(Selector(singular='pod'), id='singular'),
    pytest.param(Selector(shortcut='po'), id='shortcut'),
])
def test_names_are_specific(selector: Selector) -> None:
    assert selector.is_specific


def test_everything_repr_is_as_the_public_name() -> None:
    assert repr(EVERYTHING) == 'kopf.EVERYTHING'


# Namespace patterns.

@pytest.mark.parametrize('name, expected', [
    pytest.param('myapp-live', True, id='myapp-live'),
    pytest.param('myapp-pr-456', False, id='myapp-pr-456'),
    pytest.param('myapp-pr-123', True, id='myapp-pr-123'),
    pytest.param('otherapp-live', False, id='otherapp-live'),
    pytest.param('otherapp-pr-123', False, id='otherapp-pr-123'),
])
def test_the_manuals_example_pattern(name: str, expected: bool) -> None:
    assert match_namespace(name, 'myapp-*,!*-pr-*,*-pr-123') is expected


@pytest.mark.parametrize('name, pattern, expected', [
    pytest.param('ns1', 'ns1', True, id='exact'),
    pytest.param('ns2', 'ns1', False, id='exact-mismatch'),
    pytest.param('app-pr-123-x', '*-pr-123-*', True, id='star-glob'),
    pytest.param('ns1', 'ns?', True, id='question-glob'),
    pytest.param('ns12', 'ns?', False, id='question-glob-one-char'),
    pytest.param('app-pr-123-x', '!*-pr-123-*', False, id='negation-excludes'),
    pytest.param('app-live', '!*-pr-123-*', True, id='negation-implies-all-others'),
    pytest.param('ns2', 'ns1,ns2', False, id='first-glob-is-decisive'),
    pytest.param('ns2', '!ns1,ns2', True, id='list-with-leading-negation'),
    pytest.param('ns1', '!ns1,ns2', False, id='list-with-leading-negation-excluded'),
    pytest.param('ns1', 'ns*,!ns1', False, id='rightmost-negation-wins'),
    pytest.param('ns1', 'ns*,!ns1,ns1', True, id='rightmost-positive-wins'),
])
def test_namespace_patterns(name: str, pattern: str, expected: bool) -> None:
    assert match_namespace(name, pattern) is expected


def test_specific_namespaces_exclude_globs_negations_and_lists() -> None:
    patterns = ['ns1', 'ns*', 'ns?', '!ns2', 'ns3,ns4', 'ns5']
    assert select_specific_namespaces(patterns) == {'ns1', 'ns5'}


def test_namespace_matches_of_any_pattern_are_iterated() -> None:
    names = ['ns1', 'ns2', 'other', 'app-x']
    assert list(iter_namespace_matches(names, ['ns*,!ns2', 'app-*'])) == ['ns1', 'app-x']
