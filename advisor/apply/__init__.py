"""apply"""
