"""Forecasts of a streaming job's input rate over the next hour, per minute, with an upper
quantile and a backtest figure that says whether to trust it (:mod:`.seasonal`)."""

from scheduler.forecast.seasonal import SeriesForecast, fit

__all__ = ["SeriesForecast", "fit"]
