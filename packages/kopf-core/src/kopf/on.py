"""
The decorators to register the handlers::

    import kopf

    @kopf.on.create('kopfexamples')
    def create_fn(spec, **_):
        ...
"""
