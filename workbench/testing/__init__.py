"""Contract test classes shipped with the package: every strategy and store must pass them.

Subclass :class:`~workbench.testing.strategy_contract.StrategyContract` or
:class:`~workbench.testing.store_contract.StoreContract` in a pytest module and provide the
factory method; pytest collects the inherited tests. Needs pytest (a dev dependency).
"""
