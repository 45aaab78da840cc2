"""Objects of the user's classes as JAX users write them: a bound method transformed
(`grad(model.loss)`, `self.W` read inside, other methods called), and a configuration
object closed over (`cfg.scale`). Attributes are read as globals are: at each call without
jit, when a specialization compiles under jit (arrays at each call). Checked against
central differences and plain Python."""
import numpy as np
import pytest

from gradcheck import central_differences
from transformer import TransformError, grad, jacrev, jit, vmap
from transformer.frontend import parse

RNG = np.random.default_rng(5)


class Layer:
    def __init__(self, W):
        self.W = W


class Model:
    scale = 0.5                           # a class constant

    def __init__(self, W, V):
        self.layer = Layer(W)             # an object of the user's inside another
        self.V = V
        self.steps = 2

    def hidden(self, x):
        return np.tanh(self.layer.W @ x)

    def loss(self, x):
        h = self.hidden(x)                # another method, differentiated through
        for _ in range(self.steps):
            h = np.tanh(self.V @ h)
        return self.scale * np.sum(h ** 2)

    @property
    def doubled(self):
        return 2.0 * self.V

    def with_property(self, x):
        return np.sum(np.tanh(self.doubled @ x))

    @classmethod
    def make(cls, x):
        return x


def model() -> Model:
    return Model(RNG.normal(size=(3, 4)), RNG.normal(size=(3, 3)))


X = RNG.normal(size=4)


def fd(f, x):
    return central_differences(f, (x,), 0)


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["python", "jit"])
def test_grad_of_a_bound_method_matches_central_differences(compiled):
    m = model()
    f = jit(grad(m.loss)) if compiled else grad(m.loss)
    np.testing.assert_allclose(f(X), fd(m.loss, X), rtol=1e-6, atol=1e-8)


def test_vmap_of_a_bound_method_is_the_method_per_example():
    m = model()
    xs = RNG.normal(size=(3, 4))
    np.testing.assert_allclose(vmap(m.loss)(xs), [m.loss(x) for x in xs], rtol=1e-12)


def test_without_jit_attributes_are_read_at_each_call_as_globals_are():
    m = model()
    g = grad(m.loss)
    g(X)
    m.steps = 3                            # a number rebound
    np.testing.assert_allclose(g(X), fd(m.loss, X), rtol=1e-6, atol=1e-8)
    m.layer.W = 2.0 * m.layer.W            # an array rebound, one object down
    np.testing.assert_allclose(g(X), fd(m.loss, X), rtol=1e-6, atol=1e-8)
    m.scale = 3.0                          # the object's own value hides the class's
    np.testing.assert_allclose(g(X), fd(m.loss, X), rtol=1e-6, atol=1e-8)


@pytest.mark.slow
def test_under_jit_arrays_are_read_at_each_call_and_numbers_when_it_compiles():
    m = model()
    f = jit(grad(m.loss))
    f(X)
    m.layer.W = 2.0 * m.layer.W            # a hidden argument: seen by the next call
    np.testing.assert_allclose(f(X), fd(m.loss, X), rtol=1e-6, atol=1e-8)
    m.V *= 0.5                             # changed in place
    np.testing.assert_allclose(f(X), fd(m.loss, X), rtol=1e-6, atol=1e-8)
    steps = m.steps
    m.steps = 3                            # captured when it compiled, as jax.jit does
    before = Model.__new__(Model)
    before.__dict__.update(m.__dict__, steps=steps)
    np.testing.assert_allclose(f(X), fd(before.loss, X), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(jit(grad(m.loss))(X), fd(m.loss, X), rtol=1e-6, atol=1e-8)


class Config:
    def __init__(self):
        self.scale = 2.0
        self.A = np.arange(9.0).reshape(3, 3) / 9.0


CFG = Config()


def configured(x):
    return CFG.scale * np.sum(np.sin(CFG.A @ x))


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["python", "jit"])
def test_a_configuration_object_closed_over_is_read_by_its_attributes(compiled):
    x = np.array([0.3, -0.2, 0.5])
    f = jit(grad(configured)) if compiled else grad(configured)
    np.testing.assert_allclose(f(x), fd(configured, x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(jit(configured)(x), configured(x), rtol=1e-12)


def test_a_property_is_read_by_python_as_written():
    m = model()
    x = RNG.normal(size=3)
    np.testing.assert_allclose(grad(m.with_property)(x), fd(m.with_property, x),
                               rtol=1e-6, atol=1e-8)


def test_a_method_bound_to_a_class_is_refused_with_a_hint():
    with pytest.raises(TransformError, match="bound method .*Model.make") as info:
        parse(Model.make)
    assert "pytree" in info.value.hint


class Net:
    def __init__(self):
        self.params = {"W": RNG.normal(size=(3, 4)), "b": RNG.normal(size=3)}
        self.shape = (3,)

    def loss(self, x):
        h = np.tanh(self.params["W"] @ x + self.params["b"])
        return np.sum(h ** 2) + np.sum(np.ones(self.shape) * h)


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["python", "jit"])
def test_a_dict_of_arrays_and_a_shape_held_by_the_object(compiled):
    n = Net()
    f = jit(grad(n.loss)) if compiled else grad(n.loss)
    np.testing.assert_allclose(f(X), fd(n.loss, X), rtol=1e-6, atol=1e-8)


class Dense:
    """A layer called as a function, as in Equinox and Flax."""

    def __init__(self, W, b):
        self.W, self.b = W, b

    def __call__(self, x):
        return np.tanh(self.W @ x + self.b)


LAYER = Dense(RNG.normal(size=(3, 3)), RNG.normal(size=3))


def layer_loss(x):
    return np.sum(LAYER(LAYER(x)) ** 2)


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["python", "jit"])
def test_an_object_called_as_a_function_is_its_call_method(compiled):
    x = RNG.normal(size=3)
    f = jit(grad(layer_loss)) if compiled else grad(layer_loss)
    np.testing.assert_allclose(f(x), fd(layer_loss, x), rtol=1e-6, atol=1e-8)


def test_jacrev_and_vmap_of_an_object_called_as_a_function():
    x = RNG.normal(size=3)
    expected = np.stack([central_differences(lambda v, i=i: LAYER(v)[i], (x,), 0)
                         for i in range(3)])
    np.testing.assert_allclose(jacrev(LAYER)(x), expected, rtol=1e-6, atol=1e-8)
    xs = RNG.normal(size=(4, 3))
    np.testing.assert_allclose(vmap(LAYER)(xs), [LAYER(v) for v in xs], rtol=1e-12)


class Settable:
    def __init__(self):
        self.scale = 2.0

    def set(self, value):
        self.scale = value


SETTABLE = Settable()


def sets_then_reads(x):
    SETTABLE.set(3.0)                   # a method that changes the object, run first
    return np.sum(x * SETTABLE.scale)


def test_an_object_a_called_method_may_change_is_read_when_the_line_runs():
    SETTABLE.scale = 2.0
    np.testing.assert_allclose(grad(sets_then_reads)(np.ones(2)), [3.0, 3.0])


class Simulation:
    """A class with a method that changes the object (`run`), which the energy never calls:
    the energy's reads stay bound, so jit compiles it."""

    def __init__(self, k):
        self.k = k
        self.x = None

    def pair(self, r):
        return self.k * np.sum(r ** 2)

    def energy(self, x):
        return self.pair(x) + np.sum(np.cos(x))

    def run(self, x):
        self.x = x - 0.1 * grad(self.energy)(x)
        return self.x


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["python", "jit"])
def test_a_method_that_changes_the_object_elsewhere_leaves_the_energy_compiled(compiled):
    sim = Simulation(2.0)
    x = RNG.normal(size=3)
    f = jit(grad(sim.energy)) if compiled else grad(sim.energy)
    np.testing.assert_allclose(f(x), 4.0 * x - np.sin(x), rtol=1e-12)
    np.testing.assert_allclose(sim.run(x), x - 0.1 * (4.0 * x - np.sin(x)), rtol=1e-12)


class Knob:
    pass


KNOB = Knob()
KNOB.scale = 2.0


def turn_the_knob():
    KNOB.scale = KNOB.scale + 1.0


def turns_then_reads(x):
    turn_the_knob()                     # a helper that changes a global object
    return np.sum(x * KNOB.scale)


def test_an_object_a_called_helper_may_change_is_read_when_the_line_runs():
    KNOB.scale = 2.0
    np.testing.assert_allclose(grad(turns_then_reads)(np.ones(2)), [3.0, 3.0])


def test_objects_and_functions_of_a_library_are_not_the_users():
    # one list of library packages decides for objects, functions and methods alike
    from codegen.backends import is_user_function
    from transformer.object_attributes import is_plain_object

    tracer = type("Tracer", (), {"__module__": "autograd.tracer"})()
    assert not is_plain_object(tracer) and is_plain_object(KNOB)

    def helper(x):
        return x

    assert is_user_function(helper)
    helper.__module__ = "collections"
    assert not is_user_function(helper)
