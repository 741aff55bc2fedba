"""The embedding example: the application runs the operator in a thread, sees its data, and stops it."""
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from examples.conftest import ExampleRun


def test_the_application_runs_and_stops_the_operator(example: 'ExampleRun') -> None:
    app = example.run_script(example.kube.namespace or 'default', ready=r'The application is running')
    example.create('embedded', field='one')
    app.wait_for(r"The application sees: \{'embedded': 'one'\}")
    example.patch('embedded', {'spec': {'field': 'two'}})
    app.wait_for(r"The application sees: \{'embedded': 'two'\}")
    example.delete('embedded')
    app.wait_for(r"The application sees: \{\}")

    assert app.stop() == 0  # SIGINT, as Ctrl-C: the application stops the operator with the flag
    assert 'The operator has stopped.' in app.log
    example.assert_handled_once('remember', 'remember/spec.field', 'forget')
